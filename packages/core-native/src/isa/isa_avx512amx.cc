// The "avx512amx" kernel variant: the avx512vnni variant plus AMX-INT8 tile dot products (see binding.gyp)
// for the integer-activation prefill GEMM (isa/gemm_amx.h); everything else is the avx512vnni code. Chosen
// only where cpu.cc found AMX usable (CPU, OS tile state, Linux grant).
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

#define MLX_NS isa_avx512amx
#define MLX_AMX 1
#define MLX_VL 16
#include "kernels_impl.h"

namespace mlx {
// A function-local static, not a namespace-scope object: its initializer is compiled with this file's
// ISA flags, so it must run only once cpu.cc has found those instructions on the CPU (a global would be
// built while the addon loads, and an AVX-512 store there kills the process on an AVX2-only CPU).
const KernelTable& avx512amx_kernels() {
  static const KernelTable table = MLX_NS::make_table("avx512amx");
  return table;
}
}  // namespace mlx
