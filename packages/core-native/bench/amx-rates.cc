// What one core's AMX-INT8 unit does, measured in one run (the figures docs/architecture/kernels.md quotes,
// "AMX-INT8 GEMM"):
//   1. TDPBSUD peak: four independent 16 x 16 x 64 tile products per iteration, operands in tiles;
//   2. one 16 x 16 x 64 block of the library's "fast" AMX GEMM (src/isa/gemm_amx.h: two x planes, one W
//      sub-tile, 8 groups of 64 per k-chunk, x and W in L1 / L2) in steps: the products with their tile
//      loads; + the two tile stores of the sums; + the per-group scaling in AVX-512; the scaling alone;
//      and the library's order (the next group's products issued before this group is scaled).
// Build and run (x86-64 Linux with AMX-INT8; not part of the addon or the tests):
//   g++ -O3 -march=sapphirerapids packages/core-native/bench/amx-rates.cc -o /tmp/amx-rates && /tmp/amx-rates
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct TileConfig {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static void configure() {  // every tile 16 rows x 64 bytes
  TileConfig c;
  std::memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int t = 0; t < 8; t++) c.rows[t] = 16, c.colsb[t] = 64;
  _tile_loadconfig(&c);
}

alignas(64) static int8_t X[2][8][1024];    // [plane][group] one x tile each
alignas(64) static uint8_t W[16][8][1024];  // [sub-tile][group] one W tile each
alignas(64) static float SC[16][8][16], BI[16][8][16], DX[16][8], XS[16][8], ACC[16][256];
alignas(64) static int32_t CB[1024];

static void peak() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, X[0][0], 64);
  _tile_loadd(5, X[1][0], 64);
  _tile_loadd(6, W[0][0], 64);
  _tile_loadd(7, W[1][0], 64);
  const long n = 5000000;
  const double t = now();
  for (long i = 0; i < n; i++) {
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_dpbsud(2, 5, 6);
    _tile_dpbsud(3, 5, 7);
  }
  const double dt = now() - t;
  _tile_stored(0, CB, 64);
  std::printf("TDPBSUD peak: %.3f G/s = %.0f G int8 ops/s\n", 4 * n / dt / 1e9, 4 * n * 16.0 * 16 * 64 * 2 / dt / 1e9);
}

// (GCC's tile intrinsics are statement macros taking literal tile numbers.)
#define PRODUCTS(HI, LO, g)    \
  do {                         \
    _tile_zero(HI);            \
    _tile_zero(LO);            \
    _tile_loadd(6, W[v][g], 64); \
    _tile_loadd(4, X[0][g], 64); \
    _tile_dpbsud(HI, 4, 6);    \
    _tile_loadd(5, X[1][g], 64); \
    _tile_dpbsud(LO, 5, 6);    \
  } while (0)
#define STORES(HI, LO, cb)         \
  do {                             \
    _tile_stored(HI, cb, 64);      \
    _tile_stored(LO, cb + 256, 64); \
  } while (0)

// STEP 0: products only; 1: + stores; 2: + scaling; 3: scaling only; 4: the library's order.
template <int STEP>
__attribute__((noinline)) static void block(int v) {
  vf a[16];
#pragma GCC unroll 16
  for (int m = 0; m < 16; m++) std::memcpy(&a[m], &ACC[m][v * 16], 64);
  if (STEP == 4) {
    PRODUCTS(0, 1, 0);
    STORES(0, 1, CB);
  }
  for (int g = 0; g < 8; g++) {
    if (STEP <= 2) {
      if (g & 1) {
        PRODUCTS(2, 3, g);
        if (STEP >= 1) STORES(2, 3, CB + 512);
      } else {
        PRODUCTS(0, 1, g);
        if (STEP >= 1) STORES(0, 1, CB);
      }
    }
    if (STEP == 4 && g + 1 < 8) {
      if (g & 1) {
        PRODUCTS(0, 1, g + 1);
        STORES(0, 1, CB);
      } else {
        PRODUCTS(2, 3, g + 1);
        STORES(2, 3, CB + 512);
      }
    }
    if (STEP >= 2) {
      const int32_t* c = CB + (g & 1) * 512;
      vf s, b;
      std::memcpy(&s, SC[v][g], 64);
      std::memcpy(&b, BI[v][g], 64);
#pragma GCC unroll 16
      for (int m = 0; m < 16; m++) {
        vi hi, lo;
        std::memcpy(&hi, c + m * 16, 64);
        std::memcpy(&lo, c + 256 + m * 16, 64);
        a[m] += __builtin_convertvector((hi << 8) + lo, vf) * (s * DX[m][g]) + b * XS[m][g];
      }
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < 16; m++) std::memcpy(&ACC[m][v * 16], &a[m], 64);
}

template <int STEP>
static double ns_per_block() {
  const long reps = 20000;
  const double t = now();
  for (long r = 0; r < reps; r++)
    for (int v = 0; v < 16; v++) block<STEP>(v);
  return (now() - t) / (reps * 16 * 8) * 1e9;
}

int main() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    std::fprintf(stderr, "AMX tile data not granted (no AMX, or the kernel does not allow it)\n");
    return 1;
  }
  configure();
  for (int i = 0; i < 2 * 8 * 1024; i++) (&X[0][0][0])[i] = int8_t(i % 7 - 3);
  for (int i = 0; i < 16 * 8 * 1024; i++) (&W[0][0][0])[i] = uint8_t(i % 16);
  for (int i = 0; i < 16 * 8 * 16; i++) (&SC[0][0][0])[i] = 0.01f, (&BI[0][0][0])[i] = 0.02f;
  peak();
  for (int rep = 0; rep < 2; rep++) {
    std::printf("one 16x16x64 block, two planes (ns): products %.2f | + tile stores %.2f | + scaling %.2f | scaling alone %.2f | library order %.2f\n",
                ns_per_block<0>(), ns_per_block<1>(), ns_per_block<2>(), ns_per_block<3>(), ns_per_block<4>());
  }
  _tile_release();
  std::printf("(checksum %g)\n", double(ACC[3][5]));
}
