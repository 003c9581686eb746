#pragma once
#include <string>
#include <vector>

#include "kernels.h"

namespace mlx {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, avx512 = false, avx512_vnni = false, avx512_bf16 = false;
  bool avx_vnni = false;  // AVX-VNNI: 256-bit vpdpbusd without AVX-512
  // AMX-INT8 tile dot products (Intel Sapphire Rapids and later), usable: the CPU has AMX-TILE and
  // AMX-INT8, the OS saves the tile state, and on Linux this process was granted it (arch_prctl).
  bool amx_int8 = false;
  bool neon = false, neon_dotprod = false;  // neon_dotprod: Armv8.2 SDOT/UDOT (FEAT_DotProd)
  // AMD Zen 1 / Zen+ (and Hygon Dhyana, the same core): 256-bit instructions run as two 128-bit halves
  // and one pipe does vector integer multiplies, so the 2-plane ("fast") integer GEMM is slower than
  // the f32 dequantizing one there (docs/benchmarks.md, "AMD EPYC Zen 1 VM").
  bool narrow_int_multiply = false;
};

CpuFeatures detect_cpu();
// Variants compiled into this binary that the CPU can run, worst first.
std::vector<const KernelTable*> available_variants();
// Throws std::runtime_error naming the available variants when `name` is not one of them.
void select_variant(const std::string& name);

}  // namespace mlx
