/* The vector layer of the float64 kernels of vmath_body.h: one set of names, three
 * widths.  Define exactly one of NDP_VW1 (plain C doubles: the scalar reference,
 * fma() from the C library), NDP_VW4 (AVX2 + FMA) or NDP_VW8 (AVX-512F) before
 * including.  Every operation is one IEEE operation at every width (fma fused,
 * rint to nearest even), so a kernel written in these names gives the same bits at
 * every width: the AVX2 and AVX-512 kernels are mechanically the reference.
 *
 * vd: doubles; vi: 64-bit integers (the same bits, two's complement wrapping);
 * vm: a lane mask (comparisons are ordered and quiet: false on NaN).
 */
#ifndef NDP_VMATH_SIMD_H
#define NDP_VMATH_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(NDP_VW1)
#define VW 1
typedef double vd;
typedef uint64_t vi;
typedef int vm;
static inline vi AS_I(vd a) { vi r; memcpy(&r, &a, 8); return r; }
static inline vd AS_D(vi a) { vd r; memcpy(&r, &a, 8); return r; }
#define VSET(c) ((double)(c))
#define VSETI(c) ((uint64_t)(c))
#define VLOAD(p) (*(p))
#define VSTORE(p, v) (*(p) = (v))
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VDIV(a, b) ((a) / (b))
#define VFMA(a, b, c) fma((a), (b), (c))
#define VFNMA(a, b, c) fma(-(a), (b), (c))
#define VRINT(a) nearbyint(a)
#define VLT(a, b) ((a) < (b))
#define VLE(a, b) ((a) <= (b))
#define VGT(a, b) ((a) > (b))
#define VGE(a, b) ((a) >= (b))
#define M_AND(a, b) ((a) & (b))
#define M_OR(a, b) ((a) | (b))
#define M_XOR(a, b) ((a) ^ (b))
#define M_ALL(m) (m)
#define M_BITS(m) (m)
#define SEL(m, a, b) ((m) ? (a) : (b))
#define I_ADD(a, b) ((a) + (b))
#define I_SUB(a, b) ((a) - (b))
#define I_AND(a, b) ((a) & (b))
#define I_OR(a, b) ((a) | (b))
#define I_XOR(a, b) ((a) ^ (b))
#define I_SHL(a, n) ((a) << (n))
#define I_SHR(a, n) ((a) >> (n))

#elif defined(NDP_VW4)
#include <immintrin.h>
#define VW 4
typedef __m256d vd;
typedef __m256i vi;
typedef __m256d vm;
#define AS_I(a) _mm256_castpd_si256(a)
#define AS_D(a) _mm256_castsi256_pd(a)
#define VSET(c) _mm256_set1_pd(c)
#define VSETI(c) _mm256_set1_epi64x((long long)(c))
#define VLOAD(p) _mm256_loadu_pd(p)
#define VSTORE(p, v) _mm256_storeu_pd((p), (v))
#define VADD(a, b) _mm256_add_pd((a), (b))
#define VSUB(a, b) _mm256_sub_pd((a), (b))
#define VMUL(a, b) _mm256_mul_pd((a), (b))
#define VDIV(a, b) _mm256_div_pd((a), (b))
#define VFMA(a, b, c) _mm256_fmadd_pd((a), (b), (c))
#define VFNMA(a, b, c) _mm256_fnmadd_pd((a), (b), (c))
#define VRINT(a) _mm256_round_pd((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VLT(a, b) _mm256_cmp_pd((a), (b), _CMP_LT_OQ)
#define VLE(a, b) _mm256_cmp_pd((a), (b), _CMP_LE_OQ)
#define VGT(a, b) _mm256_cmp_pd((a), (b), _CMP_GT_OQ)
#define VGE(a, b) _mm256_cmp_pd((a), (b), _CMP_GE_OQ)
#define M_AND(a, b) _mm256_and_pd((a), (b))
#define M_OR(a, b) _mm256_or_pd((a), (b))
#define M_XOR(a, b) _mm256_xor_pd((a), (b))
#define M_BITS(m) _mm256_movemask_pd(m)
#define M_ALL(m) (M_BITS(m) == 0xf)
#define SEL(m, a, b) _mm256_blendv_pd((b), (a), (m))
#define I_ADD(a, b) _mm256_add_epi64((a), (b))
#define I_SUB(a, b) _mm256_sub_epi64((a), (b))
#define I_AND(a, b) _mm256_and_si256((a), (b))
#define I_OR(a, b) _mm256_or_si256((a), (b))
#define I_XOR(a, b) _mm256_xor_si256((a), (b))
#define I_SHL(a, n) _mm256_slli_epi64((a), (n))
#define I_SHR(a, n) _mm256_srli_epi64((a), (n))

#elif defined(NDP_VW8)
#include <immintrin.h>
#define VW 8
typedef __m512d vd;
typedef __m512i vi;
typedef __mmask8 vm;
#define AS_I(a) _mm512_castpd_si512(a)
#define AS_D(a) _mm512_castsi512_pd(a)
#define VSET(c) _mm512_set1_pd(c)
#define VSETI(c) _mm512_set1_epi64((long long)(c))
#define VLOAD(p) _mm512_loadu_pd(p)
#define VSTORE(p, v) _mm512_storeu_pd((p), (v))
#define VADD(a, b) _mm512_add_pd((a), (b))
#define VSUB(a, b) _mm512_sub_pd((a), (b))
#define VMUL(a, b) _mm512_mul_pd((a), (b))
#define VDIV(a, b) _mm512_div_pd((a), (b))
#define VFMA(a, b, c) _mm512_fmadd_pd((a), (b), (c))
#define VFNMA(a, b, c) _mm512_fnmadd_pd((a), (b), (c))
#define VRINT(a) _mm512_roundscale_pd((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VLT(a, b) _mm512_cmp_pd_mask((a), (b), _CMP_LT_OQ)
#define VLE(a, b) _mm512_cmp_pd_mask((a), (b), _CMP_LE_OQ)
#define VGT(a, b) _mm512_cmp_pd_mask((a), (b), _CMP_GT_OQ)
#define VGE(a, b) _mm512_cmp_pd_mask((a), (b), _CMP_GE_OQ)
#define M_AND(a, b) ((vm)((a) & (b)))
#define M_OR(a, b) ((vm)((a) | (b)))
#define M_XOR(a, b) ((vm)((a) ^ (b)))
#define M_BITS(m) ((int)(m))
#define M_ALL(m) ((m) == 0xff)
#define SEL(m, a, b) _mm512_mask_blend_pd((m), (b), (a))
#define I_ADD(a, b) _mm512_add_epi64((a), (b))
#define I_SUB(a, b) _mm512_sub_epi64((a), (b))
#define I_AND(a, b) _mm512_and_epi64((a), (b))
#define I_OR(a, b) _mm512_or_epi64((a), (b))
#define I_XOR(a, b) _mm512_xor_epi64((a), (b))
#define I_SHL(a, n) _mm512_slli_epi64((a), (n))
#define I_SHR(a, n) _mm512_srli_epi64((a), (n))

#else
#error "define NDP_VW1, NDP_VW4 or NDP_VW8"
#endif

/* bitwise operations on doubles, through the integer view (AVX-512F has no
 * double-typed and/xor without DQ) */
#define D_AND(a, b) AS_D(I_AND(AS_I(a), AS_I(b)))
#define D_OR(a, b) AS_D(I_OR(AS_I(a), AS_I(b)))
#define D_XOR(a, b) AS_D(I_XOR(AS_I(a), AS_I(b)))
#define VABS(a) AS_D(I_AND(AS_I(a), VSETI(0x7fffffffffffffffULL)))
#define VSIGNBIT(a) AS_D(I_AND(AS_I(a), VSETI(0x8000000000000000ULL)))

#endif
