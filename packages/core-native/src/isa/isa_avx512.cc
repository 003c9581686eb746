// The "avx512" kernel variant: kernels_impl.h compiled with this target's ISA flags (see binding.gyp).
// Standard headers come first so that no std inline function is emitted under wider ISA flags.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <immintrin.h>

#define MLX_NS isa_avx512
#define MLX_VL 16
#include "kernels_impl.h"

namespace mlx {
// extern: a namespace-scope const would otherwise have internal linkage and be dropped.
extern const KernelTable kAvx512Kernels = MLX_NS::make_table("avx512");
}  // namespace mlx
