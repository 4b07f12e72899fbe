/* AVX2 + FMA kernel of the vectorized sin/cos: the same operations as the scalar
 * reference in vmath.c, four lanes at a time; lanes the reference sends to the C
 * library are recomputed by the reference. */
#include <immintrin.h>
#include <math.h>

#include "vmath.h"

#define SET(v) _mm256_set1_pd(v)

void ndp_vm_avx2(const double *x, double *y, int64_t n, int cos_shift) {
  const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  const __m256d magic = SET(0x1.8p52); /* k + 1.5*2^52: k in the low bits */
  const __m256i shift = _mm256_set1_epi64x(cos_shift);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d v = _mm256_loadu_pd(x + i);
    __m256d ax = _mm256_and_pd(v, absmask);
    __m256d k = _mm256_round_pd(_mm256_mul_pd(v, SET(NDP_VM_TWO_OVER_PI)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_sub_pd(v, _mm256_mul_pd(k, SET(NDP_VM_PIO2_HI)));
    r = _mm256_sub_pd(r, _mm256_mul_pd(k, SET(NDP_VM_PIO2_MID)));
    r = _mm256_sub_pd(r, _mm256_mul_pd(k, SET(NDP_VM_PIO2_LO)));
    __m256d z = _mm256_mul_pd(r, r);

    __m256d p = _mm256_fmadd_pd(z, SET(NDP_VM_S6), SET(NDP_VM_S5));
    p = _mm256_fmadd_pd(z, p, SET(NDP_VM_S4));
    p = _mm256_fmadd_pd(z, p, SET(NDP_VM_S3));
    p = _mm256_fmadd_pd(z, p, SET(NDP_VM_S2));
    p = _mm256_fmadd_pd(z, p, SET(NDP_VM_S1));
    __m256d s = _mm256_fmadd_pd(_mm256_mul_pd(r, z), p, r);

    __m256d c = _mm256_fmadd_pd(z, SET(NDP_VM_C6), SET(NDP_VM_C5));
    c = _mm256_fmadd_pd(z, c, SET(NDP_VM_C4));
    c = _mm256_fmadd_pd(z, c, SET(NDP_VM_C3));
    c = _mm256_fmadd_pd(z, c, SET(NDP_VM_C2));
    c = _mm256_fmadd_pd(z, c, SET(NDP_VM_C1));
    __m256d hz = _mm256_mul_pd(SET(0.5), z);
    __m256d w = _mm256_sub_pd(SET(1.0), hz);
    __m256d corr = _mm256_sub_pd(_mm256_sub_pd(SET(1.0), w), hz);
    c = _mm256_add_pd(w, _mm256_add_pd(corr, _mm256_mul_pd(_mm256_mul_pd(z, z), c)));

    __m256i q = _mm256_add_epi64(_mm256_castpd_si256(_mm256_add_pd(k, magic)), shift);
    __m256d odd = _mm256_castsi256_pd(_mm256_slli_epi64(q, 63));
    __m256d res = _mm256_blendv_pd(s, c, odd);
    __m256d neg = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_srli_epi64(q, 1), 63));
    res = _mm256_xor_pd(res, neg);
    /* lanes for the reference: out of range or NaN, tiny x, sin-branch tiny r */
    __m256d bad = _mm256_cmp_pd(ax, SET(NDP_VM_MAX_ARG), _CMP_NLE_UQ);
    bad = _mm256_or_pd(bad, _mm256_cmp_pd(ax, SET(NDP_VM_TINY), _CMP_LT_OQ));
    __m256d rt = _mm256_and_pd(_mm256_cmp_pd(_mm256_and_pd(r, absmask), SET(NDP_VM_RTINY),
                                             _CMP_LT_OQ),
                               _mm256_cmp_pd(k, _mm256_setzero_pd(), _CMP_NEQ_UQ));
    bad = _mm256_or_pd(bad, _mm256_andnot_pd(odd, rt));
    int m = _mm256_movemask_pd(bad);
    if (m) {              /* x may be y (in place): keep the inputs before storing */
      double xin[4];
      _mm256_storeu_pd(xin, v);
      _mm256_storeu_pd(y + i, res);
      for (int j = 0; j < 4; j++)
        if (m >> j & 1) y[i + j] = ndp_vm_one(xin[j], cos_shift);
    } else {
      _mm256_storeu_pd(y + i, res);
    }
  }
  for (; i < n; i++) y[i] = ndp_vm_one(x[i], cos_shift);
}
