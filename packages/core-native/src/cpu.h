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
};

CpuFeatures detect_cpu();
// Variants compiled into this binary that the CPU can run, worst first.
std::vector<const KernelTable*> available_variants();
// Throws std::runtime_error naming the available variants when `name` is not one of them.
void select_variant(const std::string& name);

}  // namespace mlx
