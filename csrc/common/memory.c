/* Large output buffers: ask for transparent huge pages.
 *
 * A fresh multi-megabyte buffer costs one page fault per 4 KiB page on first
 * touch; on this kind of VM that is ~1.5 GB/s, slower than the codecs.  With
 * huge pages (THP in "madvise" mode, the common default) the kernel maps
 * 2 MiB at a time.  NumPy does the same for its own large arrays. */
#include <stdint.h>
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
