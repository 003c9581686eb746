// The "avx512vnni" kernel variant: kernels_impl.h compiled with AVX-512 + VNNI flags (see binding.gyp). It
// differs from "avx512" in the 4/8-bit GEMV, which uses vpdpbusd integer dot products (see gemv_vnni_tile).
// Standard headers come first so that no std inline function is emitted under wider ISA flags.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <immintrin.h>

#define MLX_NS isa_avx512vnni
#define MLX_VL 16
#include "kernels_impl.h"

namespace mlx {
// extern: a namespace-scope const would otherwise have internal linkage and be dropped.
extern const KernelTable kAvx512VnniKernels = MLX_NS::make_table("avx512vnni");
}  // namespace mlx
