/* The float64 kernels of vmath_fns.h, written once in the vector layer of
 * vmath_simd.h (include that first, at one width).  Each K_<name> returns its
 * lanes' values and sets *ok to the lanes it serves; the callers give the other
 * lanes to the C library (vmath_ref.c: ndp_vm1_<name>).  The algorithms and their
 * error budgets are described in vmath_fns.h; the constants in vmath_consts.h.
 */
#include "vmath_consts.h"

static inline vd horner(vd x, const double *c, int n) {
  vd p = VSET(c[0]);
  for (int i = 1; i < n; i++) p = VFMA(x, p, VSET(c[i]));
  return p;
}

/* (n + nl) / (d + dl) with the quotient's rounding error corrected once: the
 * remainder n - q d is exact with one fma */
static inline vd div_dd(vd n, vd nl, vd d, vd dl) {
  vd q = VDIV(n, d);
  vd rem = VFNMA(q, d, n);
  return VADD(q, VDIV(VADD(rem, VFNMA(q, dl, nl)), d));
}

/* 2^k for integral k in [-1022, 1023], by building the exponent field */
static inline vd pow2i(vd k) {
  vi b = AS_I(VADD(k, VSET(0x1.8p52)));          /* k in the low bits */
  return AS_D(I_SHL(I_ADD(b, VSETI(1023)), 52));
}

/* x = k ln2 + rr + d (|rr| <= ln2/2 + a little, d the rounding error of rr);
 * *t = rr^2 q(rr) + d, so that exp(x) = 2^k (1 + rr + t) to about 2^-60. */
static inline vd exp_reduce(vd x, vd *k, vd *t) {
  *k = VRINT(VMUL(x, VSET(NDP_VM_INV_LN2)));
  vd r = VFNMA(*k, VSET(NDP_VM_LN2), x);         /* exact */
  vd rl = VMUL(*k, VSET(-NDP_VM_LN2_LO));
  vd rr = VADD(r, rl);
  vd d = VADD(VSUB(r, rr), rl);
  vd p = horner(rr, ndp_vm_exp_q, NDP_VM_EXP_NQ);
  *t = VFMA(VMUL(rr, rr), p, d);
  return rr;
}

/* exp for |x| <= 708 (no overflow, no subnormal result), as hi + *lo */
static inline vd exp_core2(vd x, vd *lo) {
  vd k, t;
  vd rr = exp_reduce(x, &k, &t);
  vd s1 = VADD(VSET(1.0), rr);
  vd tail = VADD(VADD(VSUB(VSET(1.0), s1), rr), t); /* 1 + rr = s1 + e1 exactly */
  vd h = VADD(s1, tail);
  vd sc = pow2i(k);
  *lo = VMUL(VADD(VSUB(s1, h), tail), sc);
  return VMUL(h, sc);
}

static inline vd exp_core(vd x) {
  vd lo;
  return exp_core2(x, &lo);
}

/* expm1 for -708 <= x <= 709, as hi + *lo (hi the rounded value) */
static inline vd expm1_core2(vd x, vd *lo) {
  vd k, t;
  vd rr = exp_reduce(x, &k, &t);
  vd sc = pow2i(k);
  vd hi = VSUB(sc, VSET(1.0));                   /* exact for |k| <= 53 */
  vd a = VMUL(sc, rr);                           /* exact */
  vd s1 = VADD(hi, a);                           /* |hi| >= |a| unless k = 0 (hi = 0) */
  vd tail = VFMA(sc, t, VADD(VSUB(hi, s1), a));
  vd res = VADD(s1, tail);
  *lo = VADD(VSUB(s1, res), tail);
  return res;
}

static inline vd expm1_core(vd x) {
  vd lo;
  return expm1_core2(x, &lo);
}

static inline vd K_exp(vd x, vm *ok) {
  *ok = VLE(VABS(x), VSET(NDP_VM_EXP_MAX));
  return exp_core(x);
}

static inline vd K_expm1(vd x, vm *ok) {
  vd ax = VABS(x);
  *ok = M_AND(M_AND(VGE(x, VSET(-40.0)), VLE(x, VSET(NDP_VM_EXP_MAX))),
              VGE(ax, VSET(0x1p-54)));
  return expm1_core(x);
}

/* log(u) pieces for positive normal u: u = 2^e m, m in [sqrt(2)/2, sqrt(2)),
 * f = m - 1 (exact), log m = f - hf. */
static inline vd log_split(vd u, vd *e, vd *hf) {
  vi bits = AS_I(u);
  vi tb = I_ADD(bits, VSETI(0x3ff0000000000000ULL - NDP_VM_SQRT1_2_BITS));
  vi eb = I_SHR(tb, 52);                         /* biased exponent of the split */
  vi mb = I_ADD(I_SUB(bits, I_SHL(eb, 52)), VSETI(0x3ff0000000000000ULL));
  *e = VSUB(AS_D(I_OR(eb, VSETI(0x4330000000000000ULL))), VSET(0x1p52 + 1023.0));
  vd f = VSUB(AS_D(mb), VSET(1.0));
  vd s = VDIV(f, VADD(VSET(2.0), f));            /* log m = 2 atanh s */
  vd z = VMUL(s, s);
  vd r = VMUL(z, horner(z, ndp_vm_log_c, NDP_VM_LOG_NC));
  *hf = VMUL(s, VSUB(f, r));                     /* 2s = f - s f */
  return f;
}

/* e ln2 + f + lo, with e ln2 = hi + e*LN2_LO42 and hi + f summed exactly */
static inline vd log_join(vd e, vd f, vd lo) {
  vd hi = VMUL(e, VSET(NDP_VM_LN2_HI42));        /* exact */
  vd s = VADD(hi, f);
  vd er = VADD(VSUB(hi, s), f);                  /* |hi| >= |f| unless e = 0 */
  return VADD(s, VADD(er, VFMA(e, VSET(NDP_VM_LN2_LO42), lo)));
}

static inline vd K_log(vd x, vm *ok) {
  *ok = M_AND(VGE(x, VSET(0x1p-1022)), VLE(x, VSET(0x1.fffffffffffffp1023)));
  vd e, hf;
  vd f = log_split(x, &e, &hf);
  return log_join(e, f, VSUB(VSET(0.0), hf));
}

static inline vd K_log1p(vd x, vm *ok) {
  *ok = M_AND(M_AND(VGT(x, VSET(-1.0)), VLE(x, VSET(0x1.fffffffffffffp1023))),
              VGE(VABS(x), VSET(0x1p-54)));
  vd u = VADD(VSET(1.0), x);
  vd c = VDIV(VSUB(x, VSUB(u, VSET(1.0))), u);   /* 1 + x = u (1 + c) */
  vd e, hf;
  vd f = log_split(u, &e, &hf);
  return log_join(e, f, VSUB(c, hf));
}

/* atan(mn/mx)-based angle for 0 < ay, ax finite: the value in [0, pi/2] of
 * atan(ay/ax), as kq pi/4 + sign * atan(t), |t| <= tan(pi/8); `xneg` adds the
 * reflection pi - v (atan2 with x < 0). */
static inline vd atan_core(vd ay, vd ax, vm xneg) {
  vm swap = VGT(ay, ax);
  vd mn = SEL(swap, ax, ay), mx = SEL(swap, ay, ax);
  vm big = VGT(mn, VMUL(VSET(NDP_VM_TAN_PI8), mx));
  vd t = VDIV(SEL(big, VSUB(mn, mx), mn), SEL(big, VADD(mn, mx), mx));
  vd z = VMUL(t, t);
  vd at = VFMA(VMUL(t, z), horner(z, ndp_vm_atan_c, NDP_VM_ATAN_NC), t);
  vd kq = SEL(big, VSET(1.0), VSET(0.0));
  kq = SEL(swap, VSUB(VSET(2.0), kq), kq);
  kq = SEL(xneg, VSUB(VSET(4.0), kq), kq);
  vd flip = SEL(M_XOR(swap, xneg), VSET(-0.0), VSET(0.0));
  vd sat = D_XOR(at, flip);
  return VADD(VMUL(kq, VSET(NDP_VM_PIO4)), VFMA(kq, VSET(NDP_VM_PIO4_LO), sat));
}

static inline vd K_atan(vd x, vm *ok) {
  vd ax = VABS(x);
  *ok = VLE(ax, VSET(0x1.fffffffffffffp1023));
  vd one = VSET(1.0);
  vd v = atan_core(ax, one, VLT(one, VSET(0.0)));
  return D_OR(v, VSIGNBIT(x));
}

static inline vd K_atan2(vd y, vd x, vm *ok) {
  vd ay = VABS(y), ax = VABS(x);
  vd mx = SEL(VGT(ay, ax), ay, ax);
  *ok = M_AND(M_AND(VGT(ay, VSET(0.0)), VGT(ax, VSET(0.0))), VLE(mx, VSET(0x1p1020)));
  vd v = atan_core(ay, ax, VLT(x, VSET(0.0)));
  return D_OR(v, VSIGNBIT(y));
}

/* tanh |x| = -t / (t + 2), t = expm1(-2|x|) (t + 2 summed exactly), for
 * 2^-27 <= |x| <= 22 */
static inline vd K_tanh(vd x, vm *ok) {
  vd ax = VABS(x);
  *ok = M_AND(VGE(ax, VSET(0x1p-27)), VLE(ax, VSET(22.0)));
  vd tl, t = expm1_core2(VMUL(VSET(-2.0), ax), &tl);
  vd den = VADD(t, VSET(2.0));
  vd dl = VADD(VADD(VSUB(VSET(2.0), den), t), tl);
  vd v = div_dd(VSUB(VSET(0.0), t), VSUB(VSET(0.0), tl), den, dl);
  return D_OR(v, VSIGNBIT(x));
}

/* sinh |x| = (e + e / (e + 1)) / 2, e = expm1 |x| (e + 1 summed exactly), for
 * 2^-27 <= |x| <= 708 */
static inline vd K_sinh(vd x, vm *ok) {
  vd ax = VABS(x);
  *ok = M_AND(VGE(ax, VSET(0x1p-27)), VLE(ax, VSET(NDP_VM_EXP_MAX)));
  vd el, e = expm1_core2(ax, &el);
  vm ge1 = VGE(e, VSET(1.0));
  vd a = SEL(ge1, e, VSET(1.0)), b = SEL(ge1, VSET(1.0), e);
  vd den = VADD(a, b);
  vd dl = VADD(VADD(VSUB(a, den), b), el);
  vd v = VMUL(VSET(0.5), VADD(e, VADD(el, div_dd(e, el, den, dl))));
  return D_OR(v, VSIGNBIT(x));
}

/* cosh x = E/2 + 1/(2E), E = exp |x| as hi + lo, for 2^-26 <= |x| <= 708 */
static inline vd K_cosh(vd x, vm *ok) {
  vd ax = VABS(x);
  *ok = M_AND(VGE(ax, VSET(0x1p-26)), VLE(ax, VSET(NDP_VM_EXP_MAX)));
  vd el, e = exp_core2(ax, &el);
  vd inv = div_dd(VSET(0.5), VSET(0.0), e, el);
  return VADD(VMUL(VSET(0.5), e), VFMA(VSET(0.5), el, inv));
}

/* tan: the sin/cos reduction of vmath.h with the rounding errors of its last two
 * subtractions kept (rl), sin r and cos r as hi + lo, then sin r / cos r or
 * -cos r / sin r by div_dd */
static inline vd K_tan(vd x, vm *ok) {
  vd ax = VABS(x);
  vd k = VRINT(VMUL(x, VSET(NDP_VM_TWO_OVER_PI)));
  vd r1 = VSUB(x, VMUL(k, VSET(NDP_VM_PIO2_HI)));
  vd km = VMUL(k, VSET(NDP_VM_PIO2_MID));
  vd r2 = VSUB(r1, km);
  vd bb = VSUB(r1, r2);                           /* TwoSum of r1 and -km */
  vd e2 = VADD(VSUB(r1, VADD(r2, bb)), VSUB(bb, km));
  vd kl = VMUL(k, VSET(NDP_VM_PIO2_LO));
  vd r = VSUB(r2, kl);
  vd rl = VADD(e2, VSUB(VSUB(r2, r), kl));        /* Fast2Sum: |r2| >> |kl| */
  vd z = VMUL(r, r);
  vd rz = VMUL(r, z);
  vd ps = horner(z, ndp_vm_sin_c, 6);
  vd s = VFMA(rz, ps, r);
  vd c = horner(z, ndp_vm_cos_c, 6);
  vd sl = VFMA(rz, ps, VSUB(r, s));
  vd hz = VMUL(VSET(0.5), z);
  vd w = VSUB(VSET(1.0), hz);
  vd tail = VADD(VSUB(VSUB(VSET(1.0), w), hz), VMUL(VMUL(z, z), c));
  c = VADD(w, tail);
  vd cl = VADD(VSUB(w, c), tail);
  sl = VFMA(rl, c, sl);                           /* sin(r + rl), cos(r + rl) */
  cl = VFNMA(rl, s, cl);
  vi q = AS_I(VADD(k, VSET(0x1.8p52)));
  vm odd = VGT(AS_D(I_SHL(I_AND(q, VSETI(1)), 62)), VSET(0.0)); /* 2.0 on odd k */
  vd ms = VSUB(VSET(0.0), s), msl = VSUB(VSET(0.0), sl);
  vd v = div_dd(SEL(odd, c, s), SEL(odd, cl, sl), SEL(odd, ms, c), SEL(odd, msl, cl));
  vm far = M_OR(VGE(VABS(r), VSET(NDP_VM_RTINY)), VLE(ax, VSET(0.78)));
  *ok = M_AND(M_AND(VLE(ax, VSET(NDP_VM_MAX_ARG)), VGE(ax, VSET(0x1p-27))), far);
  return v;
}

/* log x as lh + *ll to about 2^-62 absolute for positive normal x: the log_split
 * of log() with s = f/(2 + f) as sh + sl (2 + f summed exactly, the quotient's
 * remainder by one fma) */
static inline vd log_dd(vd x, vd *ll) {
  vi bits = AS_I(x);
  vi tb = I_ADD(bits, VSETI(0x3ff0000000000000ULL - NDP_VM_SQRT1_2_BITS));
  vi eb = I_SHR(tb, 52);
  vi mb = I_ADD(I_SUB(bits, I_SHL(eb, 52)), VSETI(0x3ff0000000000000ULL));
  vd e = VSUB(AS_D(I_OR(eb, VSETI(0x4330000000000000ULL))), VSET(0x1p52 + 1023.0));
  vd f = VSUB(AS_D(mb), VSET(1.0));
  vd d = VADD(VSET(2.0), f);
  vd dl = VADD(VSUB(VSET(2.0), d), f);
  vd sh = VDIV(f, d);
  vd sl = VDIV(VFNMA(sh, dl, VFNMA(sh, d, f)), d);
  vd z = VMUL(sh, sh);
  vd t3 = VMUL(sh, VMUL(z, horner(z, ndp_vm_log_c, NDP_VM_LOG_NC)));
  vd hi = VMUL(e, VSET(NDP_VM_LN2_HI42));        /* exact */
  vd two = VADD(sh, sh);
  vd lh = VADD(hi, two);
  vd er = VADD(VSUB(hi, lh), two);               /* |hi| >= |two| unless e = 0 */
  vd lo = VADD(er, VADD(VFMA(e, VSET(NDP_VM_LN2_LO42), VADD(sl, sl)), t3));
  vd h = VADD(lh, lo);                            /* renormalized: |*ll| <= ulp(h) */
  *ll = VADD(VSUB(lh, h), lo);
  return h;
}

/* x**y = exp(y log x) with y log x as ph + pl, for positive normal x, |y log x| <= 64
 * (results within 2^+-93: no overflow, no subnormal; beyond, the error of log x
 * times y would pass 1 ulp: the C library there) */
static inline vd K_power(vd x, vd y, vm *ok) {
  vd ll, lh = log_dd(x, &ll);
  vd ph = VMUL(y, lh);
  vd pl = VFMA(y, ll, VFMA(y, lh, VSUB(VSET(0.0), ph)));
  *ok = M_AND(M_AND(VGE(x, VSET(0x1p-1022)), VLE(x, VSET(0x1.fffffffffffffp1023))),
              VLE(VABS(ph), VSET(64.0)));
  vd k = VRINT(VMUL(ph, VSET(NDP_VM_INV_LN2)));
  vd r = VFNMA(k, VSET(NDP_VM_LN2), ph);         /* exact */
  vd rl = VFNMA(k, VSET(NDP_VM_LN2_LO), pl);
  vd rr = VADD(r, rl);                            /* TwoSum: r may be below rl */
  vd bb = VSUB(rr, r);
  vd dd = VADD(VSUB(r, VSUB(rr, bb)), VSUB(rl, bb));
  vd t = VFMA(VMUL(rr, rr), horner(rr, ndp_vm_exp_q, NDP_VM_EXP_NQ), dd);
  vd s1 = VADD(VSET(1.0), rr);
  vd tail = VADD(VADD(VSUB(VSET(1.0), s1), rr), t);
  return VMUL(VADD(s1, tail), pow2i(k));
}
