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
#include <utility>
#include <vector>
#include <immintrin.h>

#define MLX_NS isa_avx2vnni
#define MLX_VL 8
#include "kernels_impl.h"

namespace mlx {
// A function-local static, not a namespace-scope object: its initializer is compiled with this file's
// ISA flags, so it must run only once cpu.cc has found those instructions on the CPU (a global would be
// built while the addon loads, and an AVX-512 store there kills the process on an AVX2-only CPU).
const KernelTable& avx2vnni_kernels() {
  static const KernelTable table = MLX_NS::make_table("avx2vnni");
  return table;
}
}  // namespace mlx
