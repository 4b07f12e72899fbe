/* Large output buffers: ask for transparent huge pages.
 *
 * A fresh multi-megabyte buffer costs one page fault per 4 KiB page on first
 * touch; on this kind of VM that is ~1.5 GB/s, slower than the codecs.  With
 * huge pages (THP in "madvise" mode, the common default) the kernel maps
 * 2 MiB at a time.  NumPy does the same for its own large arrays. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#include "internal.h"

void ndp_advise_hugepages(void *p, size_t n) {
#if defined(MADV_HUGEPAGE)
  const uintptr_t huge = (uintptr_t)2 << 20;
  if (n < 2 * huge) return;
  uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
  uintptr_t b = ((uintptr_t)p + n) & ~(huge - 1);
  if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

/* ---- streaming-store threshold (ndpack.h) ---- */

#define STREAM_MIN_FLOOR ((size_t)32 << 20)

static _Atomic(size_t) stream_min; /* 0: not computed yet */

/* The L3 size Linux reports for cpu 0 ("32768K"), or 0. */
static size_t l3_bytes(void) {
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
  if (f == NULL) return 0;
  unsigned long v = 0;
  char unit = 0;
  int k = fscanf(f, "%lu%c", &v, &unit);
  fclose(f);
  if (k < 1) return 0;
  if (k == 2 && (unit == 'K' || unit == 'k')) v <<= 10;
  else if (k == 2 && (unit == 'M' || unit == 'm')) v <<= 20;
  return (size_t)v;
}

size_t ndp_stream_min_bytes(void) {
  size_t v = atomic_load_explicit(&stream_min, memory_order_relaxed);
  if (v == 0) {
    size_t l3 = l3_bytes();
    v = l3 > STREAM_MIN_FLOOR ? l3 : STREAM_MIN_FLOOR;
    atomic_store_explicit(&stream_min, v, memory_order_relaxed);
  }
  return v;
}

void ndp_set_stream_min_bytes(size_t n) {
  atomic_store_explicit(&stream_min, n, memory_order_relaxed);
}
