// What one AVX-512 core can issue, measured in one run (the figures docs/benchmarks.md quotes in
// "What this Zen 5 VM's vector unit issues"): why the `fast` prefill GEMM's ceiling is what it is.
//   1. the core clock, from a chain of dependent integer adds (one per cycle on every x86 core);
//   2. vpdpbusd on zmm and on ymm, 12 independent register chains (the integer GEMMs' only multiply);
//   3. vfmadd231ps zmm (the exact f32 GEMM's), vdpbf16ps zmm (AVX512-BF16) and vpaddd zmm, 12 chains;
//   4. vpdpbusd interleaved with vfmadd / vdpbf16ps (do they issue to separate units? On the EPYC VM of
//      docs/benchmarks.md, no: a pair takes two cycles).
// The asm statements that keep the chains alive are volatile: a non-volatile one whose outputs are
// never read is deleted with the chains it names (an earlier version lost the FMA half of the pairs so
// and reported them as issuing side by side). `objdump -d /tmp/avx512-rates | grep -c vfmadd` must
// count 24.
// Then the ceilings that follow for the q4 GEMM on two cores: `fast` (16-bit activations, two int8
// digit planes, so two vpdpbusd per 64 byte products) and `int8` (one).
// Build and run (x86-64 with AVX-512 VNNI and BF16; not part of the addon or the tests):
//   g++ -O3 -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx512bf16 \
//     packages/core-native/bench/avx512-issue-rates.cc -o /tmp/avx512-rates && /tmp/avx512-rates
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

#define R12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static const long N = 50000000;  // iterations of 12 instructions (or 12 pairs)
static volatile int sink;

static double clock_ghz() {
  const long n = 400000000;
  long a = 0;
  const double t0 = now();
  for (long i = 0; i < n; i++) __asm__ volatile("add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0" : "+r"(a));
  const double t = now() - t0;
  sink = int(a);
  return 4.0 * n / t / 1e9;
}

// Instructions per second (billions) of OP over 12 independent accumulators of type T, seeded by SEED.
#define RATE(NAME, T, SEED, OP, CLOBBER)                                   \
  static double NAME() {                                                   \
    OPERANDS                                                               \
    R12(SEED)                                                              \
    const double t0 = now();                                               \
    for (long it = 0; it < N; it++) {                                      \
      OPAQUE                                                               \
      R12(OP)                                                              \
      CLOBBER                                                              \
    }                                                                      \
    const double t = now() - t0;                                           \
    T s = a0;                                                              \
    sink = int(((int*)&s)[0]) + int(((int*)&kB)[0] + ((int*)&kBy)[0]) +   \
           int(((float*)&kX)[0] + ((float*)&kY)[0]) + ((int*)&kC)[0] +     \
           ((int*)&kCy)[0];                                                \
    return 12.0 * N / t / 1e9;                                             \
  }

// The operands live in registers the compiler cannot see into (OPERANDS, then OPAQUE each iteration):
// with constant operands GCC folds a vpdpbusd chain into one vpaddd of a constant.
#define OPERANDS                                                                          \
  __m512i kB = _mm512_set1_epi8(3), kC = _mm512_set1_epi8(-2);                            \
  __m256i kBy = _mm256_set1_epi8(3), kCy = _mm256_set1_epi8(-2);                          \
  __m512 kX = _mm512_set1_ps(0.999f), kY = _mm512_set1_ps(1e-4f);
#define OPAQUE __asm__("" : "+v"(kB), "+v"(kC), "+v"(kBy), "+v"(kCy), "+v"(kX), "+v"(kY));

#define SEEDI(i) __m512i a##i = _mm512_set1_epi32(i);
#define SEEDIY(i) __m256i a##i = _mm256_set1_epi32(i);
#define SEEDF(i) __m512 a##i = _mm512_set1_ps(i * 1e-3f);
#define OP_DP(i) a##i = _mm512_dpbusd_epi32(a##i, kB, kC);
#define OP_DPY(i) a##i = _mm256_dpbusd_epi32(a##i, kBy, kCy);
#define OP_FMA(i) a##i = _mm512_fmadd_ps(a##i, kX, kY);
#define OP_BF(i) a##i = _mm512_dpbf16_ps(a##i, (__m512bh)kB, (__m512bh)kC);
#define OP_ADD(i) a##i = _mm512_add_epi32(a##i, kB);
// Every chain is an operand of a volatile asm each iteration, so none is dead and none can be folded.
#define KEEPALL __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
RATE(dp_zmm, __m512i, SEEDI, OP_DP, KEEPALL)
RATE(dp_ymm, __m256i, SEEDIY, OP_DPY, KEEPALL)
RATE(fma_zmm, __m512, SEEDF, OP_FMA, KEEPALL)
RATE(bf16_zmm, __m512, SEEDF, OP_BF, KEEPALL)
RATE(add_zmm, __m512i, SEEDI, OP_ADD, KEEPALL)

// Pairs: 12 vpdpbusd chains and 12 chains of the other instruction, interleaved; returns pairs per second.
#define SEEDP(i) __m512i a##i = _mm512_set1_epi32(i); __m512 f##i = _mm512_set1_ps(i * 1e-3f);
#define OP_DP_FMA(i) a##i = _mm512_dpbusd_epi32(a##i, kB, kC); f##i = _mm512_fmadd_ps(f##i, kX, kY);
#define OP_DP_BF(i) a##i = _mm512_dpbusd_epi32(a##i, kB, kC); f##i = _mm512_dpbf16_ps(f##i, (__m512bh)kB, (__m512bh)kC);
#define KEEPP                                                                                          \
  __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8), \
          "+v"(a9), "+v"(a10), "+v"(a11));                                                                \
  __asm__ volatile("" : "+v"(f0), "+v"(f1), "+v"(f2), "+v"(f3), "+v"(f4), "+v"(f5), "+v"(f6), "+v"(f7), "+v"(f8), \
          "+v"(f9), "+v"(f10), "+v"(f11));
RATE(dp_with_fma, __m512i, SEEDP, OP_DP_FMA, KEEPP)
RATE(dp_with_bf16, __m512i, SEEDP, OP_DP_BF, KEEPP)

int main() {
  const double ghz = clock_ghz();
  printf("clock (dependent adds): %.2f GHz\n", ghz);
  const double dz = dp_zmm(), dy = dp_ymm();
  printf("vpdpbusd zmm: %.2f G/s (%.2f per cycle)\n", dz, dz / ghz);
  printf("vpdpbusd ymm: %.2f G/s (%.2f per cycle; %.2f zmm-equivalents per cycle)\n", dy, dy / ghz, dy / ghz / 2);
  const double f = fma_zmm(), b = bf16_zmm(), a = add_zmm();
  printf("vfmadd231ps zmm: %.2f G/s (%.2f per cycle)\n", f, f / ghz);
  printf("vdpbf16ps zmm: %.2f G/s (%.2f per cycle)\n", b, b / ghz);
  printf("vpaddd zmm: %.2f G/s (%.2f per cycle)\n", a, a / ghz);
  const double pf = dp_with_fma(), pb = dp_with_bf16();
  printf("vpdpbusd + vfmadd231ps pairs: %.2f G pairs/s (%.2f zmm instructions per cycle)\n", pf, 2 * pf / ghz);
  printf("vpdpbusd + vdpbf16ps pairs: %.2f G pairs/s (%.2f zmm instructions per cycle)\n", pb, 2 * pb / ghz);
  // One vpdpbusd = 64 byte products = 128 integer ops; a 16-bit activation needs two (two digit planes).
  const double dbest = dz > dy / 2 ? dz : dy / 2;
  printf("ceilings on 2 cores: q4 GEMM fast (two planes) %.0f GFLOP/s, int8 %.0f GFLOP/s, f32 FMA %.0f GFLOP/s\n",
         2 * dbest * 64, 2 * dbest * 128, 2 * f * 32);
  return 0;
}
