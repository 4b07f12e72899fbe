/* Vectorized float64 sin and cos (internal).
 *
 * One algorithm, two builds: a scalar reference (vmath.c) and an AVX2+FMA kernel
 * (vmath_avx2.c) that gives the same bits.  x is reduced to r in [-pi/4, pi/4] by
 * x - k*pi/2 with pi/2 split in three parts (the first two of 33 bits, so k times them
 * is exact for |k| < 2^20 and the first subtraction is exact), then sin r and cos r
 * come from polynomials in z = r*r fitted on [0, (pi/4)^2] (relative error below
 * 1e-17), evaluated with fused multiply-adds; the quadrant k mod 4 picks and signs.
 * Inputs the reduction does not serve -- |x| > 1e5, NaN, infinities, |x| < 2^-27,
 * and sin-branch results whose reduced argument is below 2^-20 away from zero
 * (cancellation) -- go to the C library.
 */
#ifndef NDP_VMATH_H
#define NDP_VMATH_H

#include <stdint.h>

#define NDP_VM_TWO_OVER_PI 0x1.45f306dc9c883p-1
#define NDP_VM_PIO2_HI 0x1.921fb54400000p+0
#define NDP_VM_PIO2_MID 0x1.0b4611a600000p-34
#define NDP_VM_PIO2_LO 0x1.3198a2e037073p-69
#define NDP_VM_MAX_ARG 1e5
#define NDP_VM_TINY 0x1p-27
#define NDP_VM_RTINY 0x1p-20

#define NDP_VM_S1 -0.1666666666666663
#define NDP_VM_S2 0.008333333333321907
#define NDP_VM_S3 -0.00019841269829452244
#define NDP_VM_S4 2.755731358095979e-06
#define NDP_VM_S5 -2.505074222357712e-08
#define NDP_VM_S6 1.5895943103357368e-10
#define NDP_VM_C1 0.04166666666666659
#define NDP_VM_C2 -0.0013888888888872505
#define NDP_VM_C3 2.480158728855358e-05
#define NDP_VM_C4 -2.755731410296429e-07
#define NDP_VM_C5 2.0875691483269687e-09
#define NDP_VM_C6 -1.1358093609276402e-11

/* cos_shift 0: sin, 1: cos (cos x = sin(x + pi/2): one more quadrant). */
double ndp_vm_one(double x, int cos_shift);
void ndp_vm_scalar(const double *x, double *y, int64_t n, int cos_shift);
void ndp_vm_avx2(const double *x, double *y, int64_t n, int cos_shift);

#endif
