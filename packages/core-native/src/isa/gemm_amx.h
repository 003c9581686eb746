// ---- AMX-INT8 integer-activation GEMM (included by gemm_q8act.h; the avx512amx variant only) ----
// The same sums as q8act_micro, with the integer dot products done by AMX tile instructions instead of
// vpdpbusd: one TDPBSUD multiplies a 16 x 64 tile of int8 x (16 x rows, 64 k) by a 64 x 16 tile of u8
// codes (16 W rows) into 16 x 16 i32 sums, 16384 products per instruction (bench/amx-rates.cc: 7.7 T int8
// operations per second on one core). So the dot products stop being the cost; what is left is moving data and the per-group
// scaling, and this driver is built around those:
//   - W: q8act_pack_tile's tile ([k / 4][16 rows][4 codes], 64-byte rows) is already the layout AMX takes
//     for its second operand. A task packs a panel of up to 16 such sub-tiles (256 W rows) per k-chunk,
//     so each x tile fetched serves 256 output columns (x is re-read once per panel, not per 32 rows:
//     with 32-row tiles the x loads from L3 were a quarter of the time).
//   - x: quantized straight into tile order, [plane][16-row block][k-tile][16 rows][KS bytes] (KS =
//     min(G, 64) k per tile product), so a tile load is 1 KiB of contiguous memory the prefetchers follow,
//     not 16 rows K bytes apart.
//   - The per-group scaling stays in AVX-512: the tile sums go to a small buffer and come back as vectors,
//     scaled with the operations of q8act_micro in the same order (the f32 accumulators of a 16-row block
//     held in registers over a k-chunk, loaded from and stored to the task's accumulator panel around it),
//     so every output is bit-identical to the avx512vnni variant's (test/matmul-q8act.test.ts checks it).
//     The tile products of group g + 1 are issued before group g is scaled (tile pairs and buffers
//     alternate): ~10 % faster than in turn, though the tile unit and the vector units still overlap
//     little (docs/architecture/kernels.md, "AMX-INT8 GEMM").
// Tile registers: 0/1 the hi / lo plane's sums of even groups, 2/3 of odd groups, 4/5 the x tiles of the
// two planes, 6 the W sub-tile. One plane ("int8") uses 0, 2, 4 and 6.
#if defined(MLX_AMX) && defined(__AVX512VNNI__) && MLX_VL == 16

// k per tile product for group size G (a group of 128 takes two products).
static inline int amx_ks(int G) { return G < 64 ? G : 64; }

// The tile shapes for group size G; per thread, so each task sets it (and releases it when done).
struct AmxTileConfig {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static inline void amx_configure(int G) {
  const int ks = amx_ks(G);
  AmxTileConfig c;
  std::memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int t = 0; t < 4; t++) c.rows[t] = 16, c.colsb[t] = 64;            // 16 x rows x 16 i32 sums
  for (int t = 4; t < 6; t++) c.rows[t] = 16, c.colsb[t] = uint16_t(ks);  // 16 x rows x ks int8
  c.rows[6] = uint8_t(ks / 4), c.colsb[6] = 64;                           // ks / 4 k-steps x 16 W rows x 4 codes
  _tile_loadconfig(&c);
}

// Group g's tile products for one 16-row x block and one W sub-tile into tile pair BUF (0: tiles 0/1, 1:
// tiles 2/3), stored to cb + BUF * 512 (hi plane) and + 256 (lo plane). xa: the block's first k-tile of the
// chunk (hi plane; lo plane_off bytes further); wt: the sub-tile's packed chunk.
// (GCC's tile intrinsics are macros that paste the tile number into the instruction: literals only.)
#define MLX_AMX_GROUP(HI, LO)                                   \
  do {                                                          \
    _tile_zero(HI);                                             \
    if (PLANES == 2) _tile_zero(LO);                            \
    for (int h = 0; h < tpg; h++) {                             \
      const int8_t* a = xa + (g * tpg + h) * 16 * ks;           \
      _tile_loadd(6, wt + (g * G + h * ks) / 4 * VL, 64);       \
      _tile_loadd(4, a, ks);                                    \
      _tile_dpbsud(HI, 4, 6);                                   \
      if (PLANES == 2) {                                        \
        _tile_loadd(5, a + plane_off, ks);                      \
        _tile_dpbsud(LO, 5, 6);                                 \
      }                                                         \
    }                                                           \
    _tile_stored(HI, cb + BUF * 512, 64);                       \
    if (PLANES == 2) _tile_stored(LO, cb + BUF * 512 + 256, 64); \
  } while (0)
template <int PLANES, int BUF>
static inline void amx_group(const int8_t* xa, int64_t plane_off, const uint32_t* wt, int64_t g, int G, int32_t* cb) {
  const int ks = amx_ks(G), tpg = G / ks;
  if (BUF == 0) MLX_AMX_GROUP(0, 1);
  else MLX_AMX_GROUP(2, 3);
}
#undef MLX_AMX_GROUP

// acc[m * accstride + 0..16) += the k-chunk's contribution (ng groups) of a 16-row x block against one
// W sub-tile (scales sc, biases bi: [g][16 rows]); dx, xs: the block's first row at the chunk's first group,
// rows gpr apart. Rows past the x rows are zero-padded x with zero scales: computed and never written out.
template <int PLANES>
static inline void amx_block(const int8_t* xa, int64_t plane_off, const uint32_t* wt, const float* sc, const float* bi,
                             const float* dx, const float* xs, int64_t gpr, int64_t ng, int G, float* acc, int64_t accstride,
                             int32_t* cb) {
  vf a[16];  // the block's 16 rows: kept in registers over the chunk (the m loops unrolled)
#pragma GCC unroll 16
  for (int m = 0; m < 16; m++) a[m] = vload(acc + m * accstride);
  amx_group<PLANES, 0>(xa, plane_off, wt, 0, G, cb);
  for (int64_t g = 0; g < ng; g++) {
    if (g + 1 < ng) {  // the next group's products first: they run while this group is scaled
      if (g & 1) amx_group<PLANES, 0>(xa, plane_off, wt, g + 1, G, cb);
      else amx_group<PLANES, 1>(xa, plane_off, wt, g + 1, G, cb);
    }
    const int32_t* c = cb + (g & 1) * 512;
    const vf s = vload(sc + g * VL), b = vload(bi + g * VL);
#pragma GCC unroll 16
    for (int m = 0; m < 16; m++) {
      vi ia;
      std::memcpy(&ia, c + m * 16, sizeof ia);
      if (PLANES == 2) {
        vi il;
        std::memcpy(&il, c + 256 + m * 16, sizeof il);
        ia = (ia << 8) + il;  // 256 * hi-plane sum + lo-plane sum, as q8act_micro
      }
      a[m] += __builtin_convertvector(ia, vf) * (s * dx[m * gpr + g]) + b * xs[m * gpr + g];
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < 16; m++) vstore(acc + m * accstride, a[m]);
}

// y[M, N] = x . W^T (+ bias) from x already quantized in tile order (xt: `planes` planes of Mx * K bytes,
// Mx = M rounded up to 16, pad rows zero; dx / xsum: Mx rows, pad rows zero). Tasks: panels of up to 16
// W sub-tiles (fewer when N is small, so every thread has panels) times blocks of kQ8MB x rows.
static void q8act_gemm_amx(const int8_t* xt, const float* dx, const float* xsum, int64_t M, int64_t Mx, const WeightRef& w,
                           const float* bias, float* y, int planes) {
  const int G = w.group;
  const int64_t K = w.cols, N = w.rows, gpr = K / G, subs = (N + VL - 1) / VL;
  const int64_t P = std::max<int64_t>(1, std::min<int64_t>(16, subs / (2 * pool_threads())));  // sub-tiles per panel
  const int64_t TN = P * VL, panels = (subs + P - 1) / P, mbk = (M + kQ8MB - 1) / kQ8MB;
  constexpr int64_t wstride = kQ8WStride, sstride = kQ8SStride;
  const int ks = amx_ks(G);
  // x tile order: a tile is ktile bytes, a 16-row block's k-tiles follow one another (kt per block).
  const int64_t plane_off = Mx * K, ktile = 16 * int64_t(ks), kt = K / ks;
  parallel_for(panels * mbk, 1, [&](int64_t t0, int64_t t1) {
    static thread_local Q8ActScratch s;
    uint32_t* wt = s.wt.get<uint32_t>(size_t(wstride * P));
    float* sc = s.sc.get<float>(size_t(sstride * P));
    float* bi = s.bi.get<float>(size_t(sstride * P));
    float* acc = s.acc.get<float>(size_t(kQ8MB * TN));
    int32_t* cb = s.tiles.get<int32_t>(1024);
    amx_configure(G);
    for (int64_t t = t0; t < t1; t++) {
      const int64_t n0 = (t / mbk) * TN, m0 = (t % mbk) * kQ8MB, m1 = std::min<int64_t>(M, m0 + kQ8MB);
      const int64_t nr = std::min<int64_t>(TN, N - n0), ps = (nr + VL - 1) / VL;  // rows, sub-tiles of this panel
      const int64_t mb = (m1 - m0 + 15) / 16 * 16;                               // rows computed (whole blocks)
      std::memset(acc, 0, size_t(mb * TN) * sizeof(float));
      for (int64_t k0 = 0; k0 < K; k0 += kQ8KC) {
        const int64_t kc = std::min<int64_t>(kQ8KC, K - k0), ng = kc / G;
        for (int64_t v = 0; v < ps; v++)
          q8act_pack_tile(w, n0 + v * VL, int(std::min<int64_t>(VL, nr - v * VL)), k0, kc, wt + v * wstride, sc + v * sstride,
                          bi + v * sstride);
        for (int64_t m = m0; m < m0 + mb; m += 16) {
          const int8_t* xa = xt + ((m / 16) * kt + k0 / ks) * ktile;
          const float* d = dx + m * gpr + k0 / G;
          const float* xs = xsum + m * gpr + k0 / G;
          float* am = acc + (m - m0) * TN;
          // The next block's x tiles of this chunk (x_bytes per plane) come into L1 a slice per sub-tile.
          const int64_t x_bytes = kc / ks * ktile, slice = (x_bytes + ps - 1) / ps;
          const int8_t* xn = m + 16 < m0 + mb ? xa + kt * ktile : nullptr;
          for (int64_t v = 0; v < ps; v++) {
            if (xn)
              for (int64_t o = v * slice; o < std::min(x_bytes, (v + 1) * slice); o += 64)
                for (int p = 0; p < planes; p++) _mm_prefetch(reinterpret_cast<const char*>(xn + p * plane_off + o), _MM_HINT_T0);
            if (planes == 2)
              amx_block<2>(xa, plane_off, wt + v * wstride, sc + v * sstride, bi + v * sstride, d, xs, gpr, ng, G, am + v * VL, TN, cb);
            else
              amx_block<1>(xa, plane_off, wt + v * wstride, sc + v * sstride, bi + v * sstride, d, xs, gpr, ng, G, am + v * VL, TN, cb);
          }
        }
      }
      for (int64_t m = m0; m < m1; m++)
        for (int64_t r = 0; r < nr; r++) y[m * N + n0 + r] = acc[(m - m0) * TN + r] + (bias ? bias[n0 + r] : 0.f);
    }
    _tile_release();  // back to the init state: no 8 KiB tile context to save while the thread sleeps
  });
}

#endif
