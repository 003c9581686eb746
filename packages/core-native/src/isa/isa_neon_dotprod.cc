// The "neon_dotprod" kernel variant: kernels_impl.h compiled with -march=armv8.2-a+dotprod (see
// binding.gyp). It differs from "neon" in the 4/8-bit GEMV, which uses SDOT integer dot products (see
// gemv_neon_dot.h); cpu.cc selects it only when the CPU reports the dot-product extension.
// Standard headers come first so that no std inline function is emitted under wider ISA flags.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <arm_neon.h>

#define MLX_NS isa_neon_dotprod
#define MLX_VL 4
#define MLX_USE_NEON 1
#include "kernels_impl.h"

namespace mlx {
// extern: a namespace-scope const would otherwise have internal linkage and be dropped.
extern const KernelTable kNeonDotprodKernels = MLX_NS::make_table("neon_dotprod");
}  // namespace mlx
