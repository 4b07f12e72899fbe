/* AVX-512F build of the float64 kernels (vmath_fns.h): vmath_body.h at 8 lanes.
 * Chosen only where the CPU has avx512f (vmath_ref.c). */
#define NDP_VW8 1
#include "vmath_simd.h"
#include "vmath_body.h"
#include "vmath_loop.h"

NDP_VM_TABLES(x8)
