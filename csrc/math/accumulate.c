/* Running sums in place, with a carry: the order of operations of NumPy's
 * add.accumulate (y[k] = y[k-1] + x[k], the carry added to the first element), so
 * results are bit-identical to np.cumsum, faster:
 *
 * - along a middle or the leading axis, whole rows are added elementwise (the
 *   compiler vectorizes them) instead of walking the axis with a stride;
 * - along the last axis, four rows are accumulated together, so four independent
 *   chains of additions hide the latency of each one.
 */
#include "ndpack.h"

#define DEFINE_CUMSUM(NAME, T)                                                            \
  void NAME(T *x, int64_t outer, int64_t n, int64_t inner, T *carry) {                   \
    if (outer <= 0 || n <= 0 || inner <= 0) return;                                       \
    if (inner > 1) {                                                                      \
      for (int64_t o = 0; o < outer; o++) {                                               \
        T *base = x + o * n * inner, *c = carry + o * inner;                              \
        for (int64_t i = 0; i < inner; i++) base[i] = c[i] + base[i];                     \
        for (int64_t j = 1; j < n; j++) {                                                 \
          const T *prev = base + (j - 1) * inner;                                         \
          T *row = base + j * inner;                                                      \
          for (int64_t i = 0; i < inner; i++) row[i] = prev[i] + row[i];                  \
        }                                                                                 \
        const T *lastrow = base + (n - 1) * inner;                                        \
        for (int64_t i = 0; i < inner; i++) c[i] = lastrow[i];                            \
      }                                                                                   \
      return;                                                                             \
    }                                                                                     \
    int64_t o = 0;                                                                        \
    for (; o + 4 <= outer; o += 4) {                                                      \
      T *r0 = x + o * n, *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;                        \
      T a0 = carry[o], a1 = carry[o + 1], a2 = carry[o + 2], a3 = carry[o + 3];           \
      for (int64_t j = 0; j < n; j++) {                                                   \
        a0 = a0 + r0[j]; r0[j] = a0;                                                      \
        a1 = a1 + r1[j]; r1[j] = a1;                                                      \
        a2 = a2 + r2[j]; r2[j] = a2;                                                      \
        a3 = a3 + r3[j]; r3[j] = a3;                                                      \
      }                                                                                   \
      carry[o] = a0; carry[o + 1] = a1; carry[o + 2] = a2; carry[o + 3] = a3;             \
    }                                                                                     \
    for (; o < outer; o++) {                                                              \
      T *r = x + o * n, a = carry[o];                                                     \
      for (int64_t j = 0; j < n; j++) { a = a + r[j]; r[j] = a; }                         \
      carry[o] = a;                                                                       \
    }                                                                                     \
  }

DEFINE_CUMSUM(ndp_cumsum_f64, double)
DEFINE_CUMSUM(ndp_cumsum_f32, float)
DEFINE_CUMSUM(ndp_cumsum_u64, uint64_t)
