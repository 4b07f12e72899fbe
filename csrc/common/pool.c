/* The process-wide thread pool.
 *
 * One set of worker threads serves every caller.  A call of ndp_parallel_for
 * posts a job; the caller and up to nthreads-1 workers take task numbers from
 * the job's atomic counter until none is left, so several callers (Python
 * threads with the GIL released) can share the pool without oversubscribing
 * it.  The pool starts lazily and is rebuilt lazily in a child after fork().
 */
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

#define NDP_MAX_THREADS 256

typedef struct job {
  ndp_task_fn fn;
  void *ctx;
  int32_t ntasks;
  atomic_int next;            /* next task to hand out */
  atomic_int done;            /* tasks finished */
  int helpers_wanted;         /* workers that may still join */
  int active;                 /* workers inside run_tasks (pool_lock) */
  struct job *nextjob;
} job_t;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;   /* jobs posted */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;   /* a job finished */
static job_t *queue_head = NULL;
static int nworkers = 0;
static int default_nthreads = 0;   /* 0 = not yet read from the environment */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void run_tasks(job_t *job) {
  for (;;) {
    int32_t t = atomic_fetch_add(&job->next, 1);
    if (t >= job->ntasks) break;
    job->fn(job->ctx, t);
    if (atomic_fetch_add(&job->done, 1) + 1 == job->ntasks) {
      pthread_mutex_lock(&pool_lock);
      pthread_cond_broadcast(&done_cv);
      pthread_mutex_unlock(&pool_lock);
    }
  }
}

/* Remove `job` from the queue; pool_lock held. */
static void unlink_job(job_t *job) {
  job_t **p = &queue_head;
  while (*p != NULL) {
    if (*p == job) { *p = job->nextjob; return; }
    p = &(*p)->nextjob;
  }
}

static void *worker_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&pool_lock);
  for (;;) {
    while (queue_head == NULL) pthread_cond_wait(&work_cv, &pool_lock);
    job_t *job = queue_head;
    if (--job->helpers_wanted <= 0) unlink_job(job);
    job->active++;
    pthread_mutex_unlock(&pool_lock);
    run_tasks(job);
    pthread_mutex_lock(&pool_lock);
    /* The caller may free `job` once active drops to 0 and all tasks are done. */
    if (--job->active == 0) pthread_cond_broadcast(&done_cv);
  }
  return NULL;
}

static void before_fork(void) { pthread_mutex_lock(&pool_lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&pool_lock); }
static void after_fork_child(void) {
  /* Only the forking thread exists in the child: forget the workers and any
   * queued job (they belong to the parent) and start afresh on next use. */
  pthread_mutex_init(&pool_lock, NULL);
  pthread_cond_init(&work_cv, NULL);
  pthread_cond_init(&done_cv, NULL);
  queue_head = NULL;
  nworkers = 0;
}
static void install_atfork(void) {
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* Start workers until there are `want`; pool_lock held. */
static int grow_pool(int want) {
  if (want > NDP_MAX_THREADS - 1) want = NDP_MAX_THREADS - 1;
  while (nworkers < want) {
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &attr, worker_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) return nworkers;
    nworkers++;
  }
  return nworkers;
}

int ndp_parallel_for(int nthreads, int32_t ntasks, ndp_task_fn fn, void *ctx) {
  if (ntasks <= 0) return NDP_OK;
  if (nthreads > ntasks) nthreads = ntasks;
  if (nthreads <= 1) {
    for (int32_t t = 0; t < ntasks; t++) fn(ctx, t);
    return NDP_OK;
  }
  pthread_once(&atfork_once, install_atfork);
  job_t job;
  job.fn = fn;
  job.ctx = ctx;
  job.ntasks = ntasks;
  atomic_init(&job.next, 0);
  atomic_init(&job.done, 0);
  job.nextjob = NULL;
  job.active = 0;

  pthread_mutex_lock(&pool_lock);
  int avail = grow_pool(nthreads - 1);
  job.helpers_wanted = avail < nthreads - 1 ? avail : nthreads - 1;
  if (job.helpers_wanted > 0) {
    job_t **p = &queue_head;
    while (*p != NULL) p = &(*p)->nextjob;
    *p = &job;
    pthread_cond_broadcast(&work_cv);
  }
  pthread_mutex_unlock(&pool_lock);

  run_tasks(&job);

  pthread_mutex_lock(&pool_lock);
  /* No task is left to claim: make sure no worker picks the job up later. */
  unlink_job(&job);
  while (atomic_load(&job.done) < ntasks || job.active > 0) pthread_cond_wait(&done_cv, &pool_lock);
  pthread_mutex_unlock(&pool_lock);
  return NDP_OK;
}

static int env_nthreads(void) {
  const char *s = getenv("NDPACK_NTHREADS");
  if (s != NULL) {
    long v = strtol(s, NULL, 10);
    if (v >= 1 && v <= NDP_MAX_THREADS) return (int)v;
  }
  long n = 1;
#if defined(__linux__) && defined(CPU_COUNT)
  cpu_set_t set;                    /* the CPUs this process may run on (taskset, cgroups) */
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  else n = sysconf(_SC_NPROCESSORS_ONLN);
#elif defined(_SC_NPROCESSORS_ONLN)
  n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
  if (n < 1) n = 1;
  if (n > 64) n = 64;
  return (int)n;
}

int ndp_get_nthreads(void) {
  pthread_mutex_lock(&pool_lock);
  if (default_nthreads == 0) default_nthreads = env_nthreads();
  int n = default_nthreads;
  pthread_mutex_unlock(&pool_lock);
  return n;
}

int ndp_set_nthreads(int n) {
  int old = ndp_get_nthreads();
  if (n < 1) n = 1;
  if (n > NDP_MAX_THREADS) n = NDP_MAX_THREADS;
  pthread_mutex_lock(&pool_lock);
  default_nthreads = n;
  pthread_mutex_unlock(&pool_lock);
  return old;
}
