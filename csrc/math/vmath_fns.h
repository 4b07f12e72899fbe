/* Vectorized float64 exp, log, expm1, log1p, atan, atan2, tanh, sinh, cosh, tan.
 *
 * One algorithm per function, written once (vmath_body.h) in a vector layer
 * (vmath_simd.h) and compiled at three widths: plain C doubles with fma() -- the
 * scalar reference (vmath_ref.c) --, AVX2+FMA (vmath_x4.c) and AVX-512F
 * (vmath_x8.c), which give the reference's bits.  Lanes a kernel does not serve go
 * to the C library, so NaN, infinities, zeros, overflow and subnormal results are
 * exactly libm's.
 *
 * exp:   k = rint(x/ln2), r = x - k ln2 (exact with one fma) + the rounding error of
 *        the low part kept, 1 + r + r^2 q(r) (Taylor to 1/13!) summed with Fast2Sum,
 *        times 2^k built in the exponent field.  |x| <= 708.
 * expm1: the same reduction; 2^k - 1 + 2^k (r + r^2 q) with Fast2Sum.
 *        -40 <= x <= 708, |x| >= 2^-54.
 * log:   x = 2^e m, m in [sqrt(2)/2, sqrt(2)), f = m - 1 exact, s = f/(2+f),
 *        log m = f - s (f - R(s^2)) (atanh series), e ln2 in two parts, hi + f
 *        summed exactly.  Positive normal x.
 * log1p: u = 1 + x, its rounding error c = (x - (u - 1))/u, log u + c.
 * atan, atan2: min/max of |y|, |x|, t = mn/mx or (mn - mx)/(mn + mx) past
 *        tan(pi/8), atan t = t + t^3 P(t^2) (12-term Chebyshev fit), then
 *        k pi/4 +- atan t with pi/4 in two parts.  atan2: x, y finite nonzero,
 *        max(|x|,|y|) <= 2^1020.
 * tanh:  -t/(t + 2), t = expm1(-2|x|); 2^-27 <= |x| <= 22.
 * sinh:  (e + e/(e + 1))/2, e = expm1|x|; 2^-27 <= |x| <= 708.
 * cosh:  E/2 + 1/(2E), E = exp|x|; 2^-26 <= |x| <= 708.
 * tan:   the reduction of sin/cos (vmath.h) with the errors of its last two steps
 *        kept, sin r / cos r or -cos r / sin r as (hi + lo) / (hi + lo);
 *        2^-27 <= |x| <= 1e5, not within 2^-20 of a nonzero multiple of pi/2.
 * power: exp(y log x), log x as hi + lo (s = f/(2+f) as hi + lo), y log x as hi + lo
 *        by fma, exp of it as exp's; positive normal x, |y log x| <= 64.
 *
 * Measured against glibc (tests/core/test_vmath_funcs.py): see NDP_VM_ULP_* in
 * ndpack/vmath.py.
 */
#ifndef NDP_VMATH_FNS_H
#define NDP_VMATH_FNS_H

#include <stdint.h>

enum { NDP_VM_EXP = 0, NDP_VM_LOG, NDP_VM_EXPM1, NDP_VM_LOG1P, NDP_VM_ATAN, NDP_VM_TANH,
       NDP_VM_SINH, NDP_VM_COSH, NDP_VM_TAN, NDP_VM_NUNARY };
enum { NDP_VM_ATAN2 = 0, NDP_VM_POWER, NDP_VM_NBINARY };
enum { NDP_VM_ISA_SCALAR = 0, NDP_VM_ISA_AVX2 = 1, NDP_VM_ISA_AVX512 = 2, NDP_VM_ISA_COUNT };

typedef void (*ndp_vm_unary_fn)(const double *x, double *y, int64_t n);
typedef void (*ndp_vm_binary_fn)(const double *a, const double *b, double *y, int64_t n);
typedef void (*ndp_vm_binary_s_fn)(const double *a, double b, double *y, int64_t n);

/* y = f(x) (f(a, b)) over n float64; y may be x (a or b).  isa: -1 for the current
 * choice, else an NDP_VM_ISA_*.  Return 0, or -1 when fn or isa is not available. */
int ndp_vmath_unary(int fn, const double *x, double *y, int64_t n, int isa);
int ndp_vmath_binary(int fn, const double *a, const double *b, double *y, int64_t n,
                     int isa);
/* y = f(a, b) with one b for every a (a ** 1.2, arctan2(a, 2.0)) */
int ndp_vmath_binary_s(int fn, const double *a, double b, double *y, int64_t n, int isa);
/* The ISA the calls with isa = -1 use now: the best the CPU runs (avx512 needs
 * avx512f+fma, avx2 needs avx2+fma), lowered to scalar when the filters' ISA is below
 * avx2 (NDPACK_ISA=scalar|sse2, ndp_set_isa) and to avx2 by NDPACK_ISA=avx2. */
int ndp_vmath_isa(void);
int ndp_vmath_has_isa(int isa);
const char *ndp_vmath_isa_name(int isa);

/* the per-ISA tables (NULL entries never: every ISA has every function) */
extern const ndp_vm_unary_fn ndp_vm_unary_ref[NDP_VM_NUNARY];
extern const ndp_vm_binary_fn ndp_vm_binary_ref[NDP_VM_NBINARY];
extern const ndp_vm_binary_s_fn ndp_vm_binary_s_ref[NDP_VM_NBINARY];
extern const ndp_vm_unary_fn ndp_vm_unary_x4[NDP_VM_NUNARY];
extern const ndp_vm_binary_fn ndp_vm_binary_x4[NDP_VM_NBINARY];
extern const ndp_vm_binary_s_fn ndp_vm_binary_s_x4[NDP_VM_NBINARY];
extern const ndp_vm_unary_fn ndp_vm_unary_x8[NDP_VM_NUNARY];
extern const ndp_vm_binary_fn ndp_vm_binary_x8[NDP_VM_NBINARY];
extern const ndp_vm_binary_s_fn ndp_vm_binary_s_x8[NDP_VM_NBINARY];

/* the reference for one element (libm on the lanes the kernel does not serve) */
double ndp_vm1_exp(double x);
double ndp_vm1_log(double x);
double ndp_vm1_expm1(double x);
double ndp_vm1_log1p(double x);
double ndp_vm1_atan(double x);
double ndp_vm1_tanh(double x);
double ndp_vm1_sinh(double x);
double ndp_vm1_cosh(double x);
double ndp_vm1_tan(double x);
double ndp_vm1_atan2(double y, double x);
double ndp_vm1_power(double x, double y);

#endif
