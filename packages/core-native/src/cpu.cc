// Runtime CPU dispatch: detect what the CPU (and OS) support, pick the best compiled variant, and let
// MLXCEL_ISA force a specific one (tests use this to check every variant on one machine).
#include "cpu.h"

#include <cstdlib>
#include <cstring>
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(_M_ARM64) || (defined(__aarch64__) && defined(_WIN32))
#include "win32.h"
#endif
#include <stdexcept>
#include <string>

namespace mlx {
namespace {

const KernelTable* g_active = nullptr;

}  // namespace

CpuFeatures detect_cpu() {
  CpuFeatures f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = f.avx2;  // every AVX2 CPU shipped has F16C
  // __builtin_cpu_supports checks OS support (XSAVE state) as part of the feature bits on GCC >= 8.
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512_vnni = __builtin_cpu_supports("avx512vnni");
  f.avx_vnni = __builtin_cpu_supports("avxvnni");
  f.avx512_bf16 = false;
#endif
#if defined(__aarch64__)
  f.neon = true;  // Advanced SIMD is part of the AArch64 baseline
#if defined(__linux__)
  f.neon_dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__APPLE__)
  int dp = 0;
  size_t len = sizeof dp;
  f.neon_dotprod = sysctlbyname("hw.optional.arm.FEAT_DotProd", &dp, &len, nullptr, 0) == 0 && dp != 0;
#elif defined(_WIN32)
  f.neon_dotprod = IsProcessorFeaturePresent(PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE) != 0;
#endif
#endif
  return f;
}

std::vector<const KernelTable*> available_variants() {
  std::vector<const KernelTable*> v;
  CpuFeatures f = detect_cpu();
  v.push_back(&scalar_kernels());
#if defined(MLX_HAVE_X86_VARIANTS)
  if (f.avx2) v.push_back(&avx2_kernels());
  if (f.avx2 && f.avx_vnni) v.push_back(&avx2vnni_kernels());
  if (f.avx512 && f.avx2) v.push_back(&avx512_kernels());
  if (f.avx512 && f.avx2 && f.avx512_vnni) v.push_back(&avx512vnni_kernels());
#endif
#if defined(MLX_HAVE_NEON_VARIANT)
  if (f.neon) v.push_back(&neon_kernels());
#endif
#if defined(MLX_HAVE_NEON_DOTPROD_VARIANT)
  if (f.neon && f.neon_dotprod) v.push_back(&neon_dotprod_kernels());
#endif
  (void)f;
  return v;
}

const KernelTable* find_variant(const std::string& name) {
  for (const KernelTable* t : available_variants())
    if (name == t->name) return t;
  return nullptr;
}

void select_variant(const std::string& name) {
  const KernelTable* t = find_variant(name);
  if (!t) {
    std::string have;
    for (const KernelTable* v : available_variants()) have += std::string(have.empty() ? "" : ", ") + v->name;
    throw std::runtime_error("ISA variant '" + name + "' is not available on this CPU/build (available: " + have + ")");
  }
  g_active = t;
}

const KernelTable& kernels() {
  if (!g_active) {
    const char* env = std::getenv("MLXCEL_ISA");
    if (env && *env) select_variant(env);
    else g_active = available_variants().back();
  }
  return *g_active;
}

}  // namespace mlx
