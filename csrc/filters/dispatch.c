/* Choice of the filter kernels: cpu detection, NDPACK_ISA, done once.
 *
 * ndp_filters() is on the hot path: after the first call it is one atomic
 * pointer load.  The choice is made under pthread_once; ndp_filters_set_isa()
 * may replace it later (tests, benchmarks).
 */
#include "generic.h"

#include <pthread.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#define NDP_X86 1
#else
#define NDP_X86 0
#endif

/* ---- atomics (C11 if available, else GCC builtins) ---------------------- */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
typedef _Atomic(const ndp_filter_kernels *) kernels_ptr;
typedef _Atomic(int) atomic_isa;
#define LOAD_ACQ(p) atomic_load_explicit(&(p), memory_order_acquire)
#define STORE_REL(p, v) atomic_store_explicit(&(p), (v), memory_order_release)
#else
typedef const ndp_filter_kernels *kernels_ptr;
typedef int atomic_isa;
#define LOAD_ACQ(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
#endif

/* ---- cpu detection ------------------------------------------------------- */

#if NDP_X86 && defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
static int cpu_sse2(void) {
  int r[4];
  __cpuid(r, 1);
  return (r[3] >> 26) & 1;
}
static int cpu_avx2(void) {
  int r[4];
  __cpuid(r, 0);
  if (r[0] < 7) return 0;
  __cpuid(r, 1);
  int osxsave = (r[2] >> 27) & 1, avx = (r[2] >> 28) & 1;
  if (!osxsave || !avx) return 0;
  if ((_xgetbv(0) & 6) != 6) return 0; /* OS saves XMM and YMM state */
  __cpuidex(r, 7, 0);
  return (r[1] >> 5) & 1;
}
#elif NDP_X86 && (defined(__GNUC__) || defined(__clang__))
/* libgcc / compiler-rt check OSXSAVE and XCR0 before reporting AVX2. */
static int cpu_sse2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse2") != 0;
}
static int cpu_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}
#else
static int cpu_sse2(void) { return 0; }
static int cpu_avx2(void) { return 0; }
#endif

/* ---- tables -------------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static const ndp_filter_kernels *available[NDP_ISA_COUNT];
static kernels_ptr current_kernels;
static atomic_isa current_isa;

static const char *const isa_names[NDP_ISA_COUNT] = {"scalar", "sse2", "avx2"};

static int name_is(const char *s, const char *name) {
  for (; *s && *name; s++, name++) {
    char c = *s;
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != *name) return 0;
  }
  return *s == '\0' && *name == '\0';
}

static void choose(void) {
  available[NDP_ISA_SCALAR] = ndp_filters_scalar();
  /* The per-ISA getters are only called once the CPU is known to run them. */
  available[NDP_ISA_SSE2] = cpu_sse2() ? ndp_filters_sse2() : NULL;
  available[NDP_ISA_AVX2] = cpu_avx2() ? ndp_filters_avx2() : NULL;

  int best = NDP_ISA_SCALAR;
  for (int i = 0; i < NDP_ISA_COUNT; i++)
    if (available[i] != NULL) best = i;

  int isa = best;
  const char *env = getenv("NDPACK_ISA");
  if (env != NULL) {
    for (int i = 0; i < NDP_ISA_COUNT; i++)
      if (name_is(env, isa_names[i]) && available[i] != NULL) isa = i;
  }
  STORE_REL(current_isa, isa);
  STORE_REL(current_kernels, available[isa]);
}

static void ensure_init(void) { pthread_once(&init_once, choose); }

const ndp_filter_kernels *ndp_filters(void) {
  const ndp_filter_kernels *k = LOAD_ACQ(current_kernels);
  if (k != NULL) return k;
  ensure_init();
  return LOAD_ACQ(current_kernels);
}

const ndp_filter_kernels *ndp_filters_for_isa(int isa) {
  if (isa < 0 || isa >= NDP_ISA_COUNT) return NULL;
  ensure_init();
  return available[isa];
}

int ndp_cpu_has_isa(int isa) { return ndp_filters_for_isa(isa) != NULL; }

int ndp_filters_set_isa(int isa) {
  const ndp_filter_kernels *k = ndp_filters_for_isa(isa);
  if (k == NULL) return -1;
  STORE_REL(current_isa, isa);
  STORE_REL(current_kernels, k);
  return 0;
}

int ndp_filters_isa(void) {
  ensure_init();
  return LOAD_ACQ(current_isa);
}
