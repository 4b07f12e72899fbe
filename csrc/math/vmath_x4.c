/* AVX2 + FMA build of the float64 kernels (vmath_fns.h): vmath_body.h at 4 lanes. */
#define NDP_VW4 1
#include "vmath_simd.h"
#include "vmath_body.h"
#include "vmath_loop.h"

NDP_VM_TABLES(x4)
