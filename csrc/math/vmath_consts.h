/* Constants of the float64 kernels (vmath_body.h).  Derived with mpmath at 60 digits
 * by csrc/math/vmath_coeffs.py (run it to check them): Taylor coefficients for exp
 * and log (|r| <= ln2/2 and |s| <= 3 - 2 sqrt 2 make the truncation < 2^-60), a
 * Chebyshev fit (mpmath.chebyfit, 12 terms) of (atan(t)/t - 1)/t^2 on
 * |t| <= tan(pi/8) (error 2e-19). */
#ifndef NDP_VMATH_CONSTS_H
#define NDP_VMATH_CONSTS_H

#include "vmath.h"

#define NDP_VM_INV_LN2 0x1.71547652b82fep+0
#define NDP_VM_LN2 0x1.62e42fefa39efp-1          /* ln 2 rounded */
#define NDP_VM_LN2_LO 0x1.abc9e3b39803fp-56      /* ln 2 - NDP_VM_LN2 */
#define NDP_VM_LN2_HI42 0x1.62e42fefa3800p-1     /* 42 bits: e * it is exact */
#define NDP_VM_LN2_LO42 0x1.ef35793c76730p-45
#define NDP_VM_SQRT1_2_BITS 0x3fe6a09e667f3bcdULL /* sqrt(2)/2 */
#define NDP_VM_TAN_PI8 0x1.a827999fcef32p-2
#define NDP_VM_PIO4 0x1.921fb54442d18p-1         /* 3 low zero bits: k*it exact, k<=4 */
#define NDP_VM_PIO4_LO 0x1.1a62633145c07p-55
#define NDP_VM_EXP_MAX 708.0

#define NDP_VM_EXP_NQ 12   /* q(r) = sum r^(n-2)/n!, n = 2..13, highest first */
static const double ndp_vm_exp_q[NDP_VM_EXP_NQ] = {
    0x1.6124613a86d09p-33, 0x1.1eed8eff8d898p-29, 0x1.ae64567f544e4p-26,
    0x1.27e4fb7789f5cp-22, 0x1.71de3a556c734p-19, 0x1.a01a01a01a01ap-16,
    0x1.a01a01a01a01ap-13, 0x1.6c16c16c16c17p-10, 0x1.1111111111111p-7,
    0x1.5555555555555p-5, 0x1.5555555555555p-3, 0x1.0000000000000p-1};

#define NDP_VM_LOG_NC 11   /* 2/(2k+1), k = 11..1 */
static const double ndp_vm_log_c[NDP_VM_LOG_NC] = {
    0x1.642c8590b2164p-4, 0x1.8618618618618p-4, 0x1.af286bca1af28p-4,
    0x1.e1e1e1e1e1e1ep-4, 0x1.1111111111111p-3, 0x1.3b13b13b13b14p-3,
    0x1.745d1745d1746p-3, 0x1.c71c71c71c71cp-3, 0x1.2492492492492p-2,
    0x1.999999999999ap-2, 0x1.5555555555555p-1};

#define NDP_VM_ATAN_NC 12
static const double ndp_vm_atan_c[NDP_VM_ATAN_NC] = {
    0x1.0ad34c9872a05p-6, -0x1.1b33abc02b74cp-5, 0x1.74ddced402799p-5,
    -0x1.ac7a92673f8a2p-5, 0x1.e19a139251315p-5, -0x1.110e8808c0b62p-4,
    0x1.3b1392d9ceef6p-4, -0x1.745d165df31fap-4, 0x1.c71c71c304b22p-4,
    -0x1.249249248d7edp-3, 0x1.9999999999953p-3, -0x1.5555555555555p-2};

static const double ndp_vm_sin_c[6] = {NDP_VM_S6, NDP_VM_S5, NDP_VM_S4,
                                       NDP_VM_S3, NDP_VM_S2, NDP_VM_S1};
static const double ndp_vm_cos_c[6] = {NDP_VM_C6, NDP_VM_C5, NDP_VM_C4,
                                       NDP_VM_C3, NDP_VM_C2, NDP_VM_C1};

#endif
