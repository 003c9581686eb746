// The "avx2vnni" kernel variant: the avx2 kernels compiled with AVX-VNNI as well (-mavxvnni, see
// binding.gyp): the 4-bit GEMV uses 256-bit vpdpbusd instead of vpmaddubsw + vpmaddwd. For CPUs with
// AVX-VNNI but no AVX-512 (Intel Alder Lake and later client cores, Sierra Forest; AMD Zen 5 has both).
// Standard headers come first so that no std inline function is emitted under wider ISA flags.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <immintrin.h>

#define MLX_NS isa_avx2vnni
#define MLX_VL 8
#include "kernels_impl.h"

namespace mlx {
// extern: a namespace-scope const would otherwise have internal linkage and be dropped.
extern const KernelTable kAvx2VnniKernels = MLX_NS::make_table("avx2vnni");
}  // namespace mlx
