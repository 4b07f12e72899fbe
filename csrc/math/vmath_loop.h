/* Array loops of the vector kernels (vmath_x4.c, vmath_x8.c): full vectors through
 * K_<name>, lanes it does not serve and the tail through the reference
 * ndp_vm1_<name>.  The inputs are kept before the store: y may be x. */
#include "vmath_fns.h"

#define NDP_VM_UNARY_LOOP(name, sfx)                                          \
  static void name##_##sfx(const double *x, double *y, int64_t n) {           \
    int64_t i = 0;                                                            \
    for (; i + VW <= n; i += VW) {                                            \
      vd v = VLOAD(x + i);                                                    \
      vm ok;                                                                  \
      vd r = K_##name(v, &ok);                                                \
      if (M_ALL(ok)) {                                                        \
        VSTORE(y + i, r);                                                     \
      } else {                                                                \
        double xin[VW];                                                       \
        int m = M_BITS(ok);                                                   \
        VSTORE(xin, v);                                                       \
        VSTORE(y + i, r);                                                     \
        for (int j = 0; j < VW; j++)                                          \
          if (!(m >> j & 1)) y[i + j] = ndp_vm1_##name(xin[j]);               \
      }                                                                       \
    }                                                                         \
    for (; i < n; i++) y[i] = ndp_vm1_##name(x[i]);                           \
  }

#define NDP_VM_BINARY_LOOP(name, sfx)                                         \
  static void name##_##sfx(const double *a, const double *b, double *y,       \
                           int64_t n) {                                       \
    int64_t i = 0;                                                            \
    for (; i + VW <= n; i += VW) {                                            \
      vd va = VLOAD(a + i), vb = VLOAD(b + i);                                \
      vm ok;                                                                  \
      vd r = K_##name(va, vb, &ok);                                           \
      if (M_ALL(ok)) {                                                        \
        VSTORE(y + i, r);                                                     \
      } else {                                                                \
        double ain[VW], bin[VW];                                              \
        int m = M_BITS(ok);                                                   \
        VSTORE(ain, va);                                                      \
        VSTORE(bin, vb);                                                      \
        VSTORE(y + i, r);                                                     \
        for (int j = 0; j < VW; j++)                                          \
          if (!(m >> j & 1)) y[i + j] = ndp_vm1_##name(ain[j], bin[j]);       \
      }                                                                       \
    }                                                                         \
    for (; i < n; i++) y[i] = ndp_vm1_##name(a[i], b[i]);                     \
  }

#define NDP_VM_BINARY_S_LOOP(name, sfx)                                       \
  static void name##_s_##sfx(const double *a, double b, double *y, int64_t n) { \
    int64_t i = 0;                                                            \
    vd vb = VSET(b);                                                          \
    for (; i + VW <= n; i += VW) {                                            \
      vd va = VLOAD(a + i);                                                   \
      vm ok;                                                                  \
      vd r = K_##name(va, vb, &ok);                                           \
      if (M_ALL(ok)) {                                                        \
        VSTORE(y + i, r);                                                     \
      } else {                                                                \
        double ain[VW];                                                       \
        int m = M_BITS(ok);                                                   \
        VSTORE(ain, va);                                                      \
        VSTORE(y + i, r);                                                     \
        for (int j = 0; j < VW; j++)                                          \
          if (!(m >> j & 1)) y[i + j] = ndp_vm1_##name(ain[j], b);            \
      }                                                                       \
    }                                                                         \
    for (; i < n; i++) y[i] = ndp_vm1_##name(a[i], b);                        \
  }

#define NDP_VM_TABLES(sfx)                                                    \
  NDP_VM_UNARY_LOOP(exp, sfx)                                                 \
  NDP_VM_UNARY_LOOP(log, sfx)                                                 \
  NDP_VM_UNARY_LOOP(expm1, sfx)                                               \
  NDP_VM_UNARY_LOOP(log1p, sfx)                                               \
  NDP_VM_UNARY_LOOP(atan, sfx)                                                \
  NDP_VM_UNARY_LOOP(tanh, sfx)                                                \
  NDP_VM_UNARY_LOOP(sinh, sfx)                                                \
  NDP_VM_UNARY_LOOP(cosh, sfx)                                                \
  NDP_VM_UNARY_LOOP(tan, sfx)                                                 \
  NDP_VM_BINARY_LOOP(atan2, sfx)                                              \
  NDP_VM_BINARY_LOOP(power, sfx)                                              \
  NDP_VM_BINARY_S_LOOP(atan2, sfx)                                            \
  NDP_VM_BINARY_S_LOOP(power, sfx)                                            \
  const ndp_vm_unary_fn ndp_vm_unary_##sfx[NDP_VM_NUNARY] = {                 \
      exp_##sfx, log_##sfx, expm1_##sfx, log1p_##sfx, atan_##sfx,             \
      tanh_##sfx, sinh_##sfx, cosh_##sfx, tan_##sfx};                         \
  const ndp_vm_binary_fn ndp_vm_binary_##sfx[NDP_VM_NBINARY] = {atan2_##sfx,       \
                                                                 power_##sfx};      \
  const ndp_vm_binary_s_fn ndp_vm_binary_s_##sfx[NDP_VM_NBINARY] = {                \
      atan2_s_##sfx, power_s_##sfx};
