// What one AVX2 core can issue, measured in one run (the figures docs/architecture/kernels.md quotes,
// "Integer-activation GEMM", "Where AVX2 stands"):
//   1. FMAs, 10 independent register chains: the f32 GEMM's instruction ceiling;
//   2. vpmaddubsw + vpaddw pairs, 10 chains: the integer GEMM's (one pair = 32 byte products);
//   3. a copy of gemm_q8act.h's AVX2 s16-sum micro-kernel (2 x rows, 2 planes, one 8-row W tile, one
//      512-code chunk, group 64) with x in L1, its x values broadcast from memory as in the library;
//   4. the same with constant x (no x loads at all): what the instruction mix alone allows.
// Build and run (x86-64 with AVX2; not part of the addon or the tests):
//   g++ -O3 -mavx2 -mfma packages/core-native/bench/avx2-issue-rates.cc -o /tmp/avx2-rates && /tmp/avx2-rates
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#define R10(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

static void fma_rate() {
  const long N = 100000000;
  const __m256 b = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(1e-4f);
#define D(i) __m256 a##i = _mm256_set1_ps(i * 1e-3f);
  R10(D)
  const double t0 = now();
  for (long it = 0; it < N; it++) {
#define F(i) a##i = _mm256_fmadd_ps(a##i, b, c);
    R10(F)
    __asm__("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9));
  }
  const double s = now() - t0;
  std::printf("FMA:                      %.2f G/s  (%.0f GFLOP/s f32)  [%g]\n", N * 10 / s / 1e9, N * 10 * 16 / s / 1e9, double(a0[0] + a9[0]));
}

static void pair_rate() {
  const long N = 100000000;
  __m256i b = _mm256_set1_epi8(3);
  const __m256i c = _mm256_set1_epi8(-2);
#define E(i) __m256i a##i = _mm256_set1_epi16(i);
  R10(E)
  const double t0 = now();
  for (long it = 0; it < N; it++) {
#define P(i) a##i = _mm256_add_epi16(a##i, _mm256_maddubs_epi16(b, c));
    R10(P)
    __asm__("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(b));
  }
  const double s = now() - t0;
  // 2-plane ("fast") x: 16 multiply-adds per pair.
  std::printf("vpmaddubsw + vpaddw:      %.2f G/s  (%.0f GFLOP/s with 2-plane x)  [%d]\n", N * 10 / s / 1e9, N * 10 * 32 / s / 1e9,
              _mm256_extract_epi16(a0, 0) + _mm256_extract_epi16(a9, 0));
}

// 2 x rows, 2 planes, one 8-row tile, ng groups of 64: the library's step (load W, per row and plane
// broadcast x, vpmaddubsw, vpaddw; widen every 8 steps; scale per group).
template <bool LOADS>
__attribute__((noinline)) static void micro(const uint32_t* wt, const int8_t* xh0, const int8_t* xh1, int64_t plane_off, int ng, float* acc) {
  const int G = 64;
  const __m256i ones = _mm256_set1_epi16(1), c256 = _mm256_set1_epi16(256);
  for (int g = 0; g < ng; g++) {
    __m256i ia[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    const uint32_t* wg = wt + g * (G / 4) * 8;
    for (int k0 = 0; k0 < G / 4; k0 += 8) {
      __m256i h[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()}, l[2] = {h[0], h[0]};
      for (int k4 = k0; k4 < k0 + 8; k4++) {
        const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + k4 * 8));
        const int8_t* xr[2] = {xh0, xh1};
        for (int m = 0; m < 2; m++) {
          int32_t x4 = 0x01020304 + m, x5 = 0x05060708 + m;
          if (LOADS) {
            std::memcpy(&x4, xr[m] + g * G + 4 * k4, 4);
            std::memcpy(&x5, xr[m] + plane_off + g * G + 4 * k4, 4);
          }
          h[m] = _mm256_add_epi16(h[m], _mm256_maddubs_epi16(wv, _mm256_set1_epi32(x4)));
          __asm__("" : "+x"(h[m]));
          l[m] = _mm256_add_epi16(l[m], _mm256_maddubs_epi16(wv, _mm256_set1_epi32(x5)));
          __asm__("" : "+x"(l[m]));
        }
      }
      for (int m = 0; m < 2; m++)
        ia[m] = _mm256_add_epi32(ia[m], _mm256_add_epi32(_mm256_madd_epi16(h[m], c256), _mm256_madd_epi16(l[m], ones)));
    }
    for (int m = 0; m < 2; m++) {
      const __m256 v = _mm256_add_ps(_mm256_loadu_ps(acc + 8 * m), _mm256_mul_ps(_mm256_cvtepi32_ps(ia[m]), _mm256_set1_ps(1e-6f)));
      _mm256_storeu_ps(acc + 8 * m, v);
    }
  }
}

template <bool LOADS>
static void micro_rate(const char* what) {
  const int KC = 512, ng = KC / 64, MB = 4;
  alignas(64) static uint32_t wt[KC / 4 * 8];
  alignas(64) static int8_t xq[2 * MB * KC];
  alignas(64) static float acc[MB * 8];
  for (int i = 0; i < KC / 4 * 8; i++) wt[i] = 0x0f0a0503u * uint32_t(i + 1) & 0x0f0f0f0fu;
  for (int i = 0; i < 2 * MB * KC; i++) xq[i] = int8_t(i * 37);
  const long reps = 400000;
  const double t0 = now();
  for (long r = 0; r < reps; r++)
    for (int m = 0; m < MB; m += 2) micro<LOADS>(wt, xq + m * KC, xq + (m + 1) * KC, MB * KC, ng, acc + 8 * m);
  const double s = now() - t0;
  const double macs = double(reps) * MB * 8 * KC;
  std::printf("%s %.0f GFLOP/s  [%g]\n", what, 2 * macs / s / 1e9, double(acc[0]));
}

// 5. GEMV chunk loops. V 0: s16 ("fast"); 1: only the four vpmaddwd (wrong numbers: a cost probe);
// 2: s8 ("int8").
constexpr int kGemvK = 4096, kGemvRows = 64;
alignas(64) static uint8_t g_w[kGemvRows * kGemvK / 2];
alignas(64) static int16_t g_x16[kGemvK];
alignas(64) static int8_t g_x8[kGemvK];
alignas(64) static float g_f[kGemvRows * kGemvK / 64];

template <int V>
__attribute__((noinline)) static float gemv_row(const uint8_t* row, const float* f) {
  const __m256i m4 = _mm256_set1_epi16(0x000f), nib = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int c = 0; c < kGemvK / 64; c++) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(row + c * 32));
    __m256i a;
    if (V == 2) {
      const __m256i* p = reinterpret_cast<const __m256i*>(g_x8 + c * 64);
      const __m256i lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
      a = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(lo, p[0]), _mm256_maddubs_epi16(hi, p[1])), ones);
    } else {
      const __m256i* p = reinterpret_cast<const __m256i*>(g_x16 + c * 64);
      __m256i n0 = v, n1 = v, n2 = v, n3 = v;
      if (V == 0) {
        n0 = _mm256_and_si256(v, m4);
        n1 = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        n2 = _mm256_and_si256(_mm256_srli_epi16(v, 8), m4);
        n3 = _mm256_srli_epi16(v, 12);
      }
      a = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(n0, p[0]), _mm256_madd_epi16(n1, p[1])),
                           _mm256_add_epi32(_mm256_madd_epi16(n2, p[2]), _mm256_madd_epi16(n3, p[3])));
    }
    acc[c & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), _mm256_broadcast_ss(f + c), acc[c & 1]);
  }
  alignas(32) float o[8];
  _mm256_store_ps(o, _mm256_add_ps(acc[0], acc[1]));
  return o[0] + o[5];
}

template <int V>
static void gemv_rate(const char* what) {
  double best = 1e9;
  float s = 0;
  for (int r = 0; r < 5; r++) {
    const double t0 = now();
    for (int it = 0; it < 400; it++)
      for (int n = 0; n < kGemvRows; n++) s += gemv_row<V>(g_w + n * kGemvK / 2, g_f + n * (kGemvK / 64));
    const double t = now() - t0;
    best = t < best ? t : best;
  }
  const double chunks = 400.0 * kGemvRows * (kGemvK / 64);
  std::printf("%s %.2f ns per 64 codes  [%g]\n", what, best / chunks * 1e9, double(s));
}

int main() {
  for (int i = 0; i < int(sizeof(g_w)); i++) g_w[i] = uint8_t((i * 2654435761u) >> 24);
  for (int i = 0; i < kGemvK; i++) g_x16[i] = int16_t((i * 7919) % 32000 - 16000), g_x8[i] = int8_t((i * 37) % 255 - 127);
  for (int i = 0; i < kGemvRows * kGemvK / 64; i++) g_f[i] = 1e-3f * float(i % 7);
  fma_rate();
  pair_rate();
  micro_rate<true>("s16-sum micro-kernel, x broadcast from L1:");
  micro_rate<false>("same, constant x (no x loads):          ");
  gemv_rate<0>("q4 GEMV chunk loop, s16 (fast):          ");
  gemv_rate<1>("same, its four vpmaddwd only (floor):    ");
  gemv_rate<2>("q4 GEMV chunk loop, s8 (int8):           ");
}
