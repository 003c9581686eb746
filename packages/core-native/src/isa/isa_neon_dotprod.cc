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
#include <utility>
#include <vector>
#include <arm_neon.h>

#define MLX_NS isa_neon_dotprod
#define MLX_VL 4
#define MLX_USE_NEON 1
#include "kernels_impl.h"

namespace mlx {
// A function-local static, not a namespace-scope object: its initializer is compiled with this file's
// ISA flags, so it must run only once cpu.cc has found those instructions on the CPU (a global would be
// built while the addon loads, and an AVX-512 store there kills the process on an AVX2-only CPU).
const KernelTable& neon_dotprod_kernels() {
  static const KernelTable table = MLX_NS::make_table("neon_dotprod");
  return table;
}
}  // namespace mlx
