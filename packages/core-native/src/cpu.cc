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
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif
#include <stdexcept>
#include <string>

namespace mlx {
namespace {

const KernelTable* g_active = nullptr;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// AMX-INT8 needs three things: the instructions (CPUID leaf 7: AMX-TILE = EDX bit 24, AMX-INT8 = bit 25),
// the OS saving the 8 KiB tile state (XCR0 bits 17 and 18), and on Linux a per-process grant: the kernel
// keeps the tile data disabled (XFD) until arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) asks for
// it, and the first tile instruction without it kills the process. The grant covers every thread of the
// process, so asking once here, before any kernel runs, is enough. Checked once.
bool amx_int8_usable() {
  static const bool ok = [] {
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, nullptr) < 7) return false;
    __cpuid_count(7, 0, a, b, c, d);
    if (!((d >> 24) & 1) || !((d >> 25) & 1)) return false;
    __cpuid(1, a, b, c, d);
    if (!((c >> 27) & 1)) return false;  // OSXSAVE: xgetbv is allowed
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return false;
#if defined(__linux__)
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
#endif
    return true;
  }();
  return ok;
}

// AMD family 0x17 below model 0x30 (Zen "Naples" / "Summit Ridge" / "Raven Ridge", Zen+ "Pinnacle Ridge"
// / "Picasso"; Zen 2 starts at 0x30) or Hygon family 0x18 (Dhyana, a Zen 1 core).
bool zen1_core() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned base_family = (a >> 8) & 0xf, family = base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family;
  const unsigned model = ((a >> 4) & 0xf) | (base_family == 0xf ? ((a >> 16) & 0xf) << 4 : 0);
  if (std::strcmp(vendor, "AuthenticAMD") == 0) return family == 0x17 && model < 0x30;
  if (std::strcmp(vendor, "HygonGenuine") == 0) return family == 0x18;
  return false;
}
#endif

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
  f.amx_int8 = amx_int8_usable();
  f.narrow_int_multiply = zen1_core();
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
  if (f.avx512 && f.avx2 && f.avx512_vnni && f.amx_int8) v.push_back(&avx512amx_kernels());
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
