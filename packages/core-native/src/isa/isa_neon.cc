// The "neon" kernel variant: kernels_impl.h compiled with this target's ISA flags (see binding.gyp).
// Standard headers come first so that no std inline function is emitted under wider ISA flags.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <arm_neon.h>

#define MLX_NS isa_neon
#define MLX_VL 4
#define MLX_USE_NEON 1
#include "kernels_impl.h"

namespace mlx {
// extern: a namespace-scope const would otherwise have internal linkage and be dropped.
extern const KernelTable kNeonKernels = MLX_NS::make_table("neon");
}  // namespace mlx
