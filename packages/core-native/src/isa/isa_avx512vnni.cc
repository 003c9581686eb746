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
#include <utility>
#include <vector>
#include <immintrin.h>

#define MLX_NS isa_avx512vnni
#define MLX_VL 16
#include "kernels_impl.h"

namespace mlx {
// A function-local static, not a namespace-scope object: its initializer is compiled with this file's
// ISA flags, so it must run only once cpu.cc has found those instructions on the CPU (a global would be
// built while the addon loads, and an AVX-512 store there kills the process on an AVX2-only CPU).
const KernelTable& avx512vnni_kernels() {
  static const KernelTable table = MLX_NS::make_table("avx512vnni");
  return table;
}
}  // namespace mlx
