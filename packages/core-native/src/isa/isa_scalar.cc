// The "scalar" kernel variant: kernels_impl.h compiled with this target's ISA flags (see binding.gyp).
// Standard headers come first so that no std inline function is emitted under wider ISA flags.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#if defined(__SSE2__)
#include <emmintrin.h>  // the x86-64 baseline: code decoders (decoders.h)
#endif

#define MLX_NS isa_scalar
#define MLX_VL 4
#include "kernels_impl.h"

namespace mlx {
// extern: a namespace-scope const would otherwise have internal linkage and be dropped.
extern const KernelTable kScalarKernels = MLX_NS::make_table("scalar");
}  // namespace mlx
