// GEMV over 4- and 8-bit weights in the 16-row tile layout (kWeightTiles16, kernels.h), AVX-512 VNNI only.
// Included by kernels_impl.h inside the variant namespace (MLX_NS), after gemm_q8act.h. Not a standalone
// header: no include guard on purpose.
//
// Why a second layout: in the row layout a vector of codes is one weight row's, so the i32 lanes of a
// dot product are code positions of that row, and every (weight row, x row, 64-byte chunk) also pays a
// convert, a permute of the group factors, an FMA and, per row, a horizontal sum: work that does not
// shrink when M x rows share the weights (batched decode cost ~5 single-row GEMVs for 8 rows). Here a
// 64-byte vector holds one 32-bit code word (8 codes) of 16 weight rows, so the lanes are weight rows:
// x is broadcast 4 bytes at a time, the i32 sums run over a whole group, and the float work (convert,
// times the 16 rows' scales, plus their biases times the x group sum) is once per group for 16 rows.
// Per 64 bytes of codes and x row that leaves the dot products (2 per digit plane) and about a sixth
// of a float instruction; the nibble split is shared by all x rows.
//
// Numerics: x is rounded per group exactly as in the row-layout VNNI GEMV (vnni_prepare: the same T, the
// same rounding), and each output is sum over groups of f_g * dot_g + b_g * xsum_g, accumulated group by
// group in one f32 chain per (weight row, x row) in an order that depends on neither the number of x
// rows nor the number of tiles per call, so row m of a batched call is bit-identical to that row alone.
// The order differs from the row layout's (per-chunk partial sums, two chains, a horizontal sum), so the
// two layouts agree to rounding, not bit for bit (test/matmul-tiles.test.ts).

#if defined(__AVX512VNNI__) && MLX_VL == 16

// Digit planes of one x row for the tile kernels, NP of them (most significant first), as one piece per
// code word: for 4-bit codes piece j of plane p is elements 8j .. 8j + 7, the even positions then the
// odd ones (the x values of word j's low and high nibbles), 8 bytes at out + j * stride + p * 8; for
// 8-bit codes elements 4j .. 4j + 3, 4 bytes at out + j * stride + p * 4. The kernels interleave the
// pieces of all rows and planes of an x block (stride = rows * NP * piece bytes), so a block's x is one
// sequential stream:
// with separate planes, 8 rows at K = 8192 were 16 streams of 8 KiB read 8 bytes per step, and the
// 8-row GEMV ran at 0.86x the row layout's instead of 2.2x (bench/layouts-ab.mjs). sx[g]: the group's scale (max |x| / T).
// Returns false when x holds a non-finite value.
static bool tiles_prepare(const float* x, int64_t K, int G, int bits, int8_t* out, int64_t stride, float* sx, int NP) {
  const int64_t gpr = K / G;
  const __m512 inf = _mm512_set1_ps(INFINITY);
  const int T = NP == 3 ? kPlaneT : NP == 2 ? 32639 : 127;
  const __m512i tmax = _mm512_set1_epi32(T), tmin = _mm512_set1_epi32(-T);
  for (int64_t g = 0; g < gpr; g++) {
    const float* xg = x + g * G;
    __m512 mx = _mm512_setzero_ps();
    __mmask16 bad = 0;
    for (int c = 0; c < G; c += 16) {
      const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(xg + c));
      bad |= _mm512_cmp_ps_mask(a, inf, _CMP_NLT_UQ);  // |x| >= inf, or NaN
      mx = _mm512_max_ps(mx, a);
    }
    if (bad) return false;
    const float m = _mm512_reduce_max_ps(mx);
    sx[g] = m / float(T);
    const __m512 inv = _mm512_set1_ps(m > 0.f ? float(T) / m : 0.f);
    for (int c = 0; c < G; c += 16) {
      __m512i t = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xg + c), inv));
      t = _mm512_min_epi32(_mm512_max_epi32(t, tmin), tmax);
      __m512i d[3];
      if (NP == 3) plane_digits(t, d[0], d[1], d[2]);
      else if (NP == 2) {
        const vi a0 = (((vi)t + 128) & 255) - 128;
        d[1] = (__m512i)a0;
        d[0] = (__m512i)(((vi)t - a0) >> 8);
      } else d[0] = t;
      if (bits == 4) {
        const int64_t j = (g * G + c) / 8;
        for (int p = 0; p < NP; p++) {
          const __m128i b = _mm_shuffle_epi8(_mm512_cvtepi32_epi8(d[p]), _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15));
          _mm_storel_epi64(reinterpret_cast<__m128i*>(out + j * stride + p * 8), b);
          _mm_storel_epi64(reinterpret_cast<__m128i*>(out + (j + 1) * stride + p * 8), _mm_unpackhi_epi64(b, b));
        }
      } else {
        const int64_t j = (g * G + c) / 4;
        for (int p = 0; p < NP; p++) {
          alignas(16) int32_t b[4];
          _mm_store_si128(reinterpret_cast<__m128i*>(b), _mm512_cvtepi32_epi8(d[p]));
          for (int i = 0; i < 4; i++) std::memcpy(out + (j + i) * stride + p * 4, &b[i], 4);
        }
      }
    }
  }
  return true;
}

// i32 accumulators per (tile, x row): one per digit plane, or for a single x row two per plane (4-bit:
// the low and high nibbles' sums apart; 8-bit: even and odd words'), so that one x row still keeps 2-6
// dot-product chains going. Integer sums are exact, so how they are split does not change a bit of the
// result.
template <int NP, int MB>
constexpr int kTileAcc = MB == 1 ? 2 * NP : NP;

// Tiles per kernel call. One: the tiles of a call are RT separate streams of DRAM, and one sequential
// stream per thread (with the software prefetch below) measured faster than four side by side.
template <int NP, int MB>
constexpr int kTilesPerCall = 1;

// acc += the byte dot products of codes w (u8) with the 4 int8 x values at x, broadcast to every lane.
// Inline asm rather than _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32(..)): GCC 12 gave every
// accumulator of the 8-row kernel a register copy in and out per step (the builtin's destination is
// not tied to its accumulator) and a separate vpbroadcastd per dot product; here the accumulator is
// updated in place and the broadcast is the instruction's own memory operand ({1to16}).
static inline void tiles_dot(__m512i& acc, __m512i w, const int8_t* x) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(x)));
}

// Software prefetch distance in bytes (TilePrefetch: one line ahead per line consumed).
constexpr int64_t kTilesPrefetch = 4096;

// y[m][16 t + lane] for the RT tiles t0 .. t0 + RT - 1 and MB prepared x rows (planes: their pieces as tiles_prepare
// interleaves them, piece j of row m, plane p at (j * MB + m) * NP * 8; sx
// and xsum [MB][gpr]).
template <int BITS, int SD, int NP, int MB, int RT>
static inline void gemv_tiles_kernel(const int8_t* planes, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                                     const float* bias, float* y, int64_t N, int64_t t0) {
  constexpr int NA = kTileAcc<NP, MB>;
  constexpr bool split = NA == 2 * NP;  // low and high nibbles in accumulators of their own
  const int G = w.group;
  constexpr int CW = 32 / BITS, PW = CW;  // codes per word; x bytes per piece (one per code)
  const int64_t gpr = K / G, wpg = G / CW, tile_words = K / CW * 16;
  const uint32_t* tp[RT];
  for (int rt = 0; rt < RT; rt++) tp[rt] = reinterpret_cast<const uint32_t*>(w.data) + (t0 + rt) * tile_words;
  // The next call's tiles follow these in memory: prefetch them in address order as these are consumed.
  TilePrefetch pref(reinterpret_cast<const uint8_t*>(tp[0]), kTilesPrefetch);
  const __m512i nib = _mm512_set1_epi8(0x0f);
  __m512 acc[RT][MB];
  for (int rt = 0; rt < RT; rt++)
    for (int m = 0; m < MB; m++) acc[rt][m] = _mm512_setzero_ps();
  for (int64_t g = 0; g < gpr; g++) {
    __m512i a[RT][MB][NA];
    for (int rt = 0; rt < RT; rt++)
      for (int m = 0; m < MB; m++)
        for (int p = 0; p < NA; p++) a[rt][m][p] = _mm512_setzero_si512();
    for (int64_t j = g * wpg; j < (g + 1) * wpg; j++) {
      for (int rt = 0; rt < RT; rt++) {
        const uint32_t* src = tp[rt] + j * 16;
        pref.advance(64);
        const __m512i v = _mm512_loadu_si512(src);
        if (BITS == 4) {
          const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
          for (int m = 0; m < MB; m++) {
            const int8_t* xp = planes + (j * MB + m) * NP * PW;
            for (int p = 0; p < NP; p++) {
              const int8_t* xq = xp + p * PW;  // 4 bytes for the low nibbles, then 4 for the high ones
              if (split) {
                tiles_dot(a[rt][m][2 * p], lo, xq);
                tiles_dot(a[rt][m][2 * p + 1], hi, xq + 4);
              } else {
                tiles_dot(a[rt][m][p], lo, xq);
                tiles_dot(a[rt][m][p], hi, xq + 4);
              }
            }
          }
        } else {  // 8-bit: the word's 4 codes against the piece's 4 x bytes
          for (int m = 0; m < MB; m++) {
            const int8_t* xp = planes + (j * MB + m) * NP * PW;
            for (int p = 0; p < NP; p++) tiles_dot(a[rt][m][split ? 2 * p + (j & 1) : p], v, xp + p * PW);
          }
        }
      }
    }
    // The group's float work, once per 16 weight rows: fa = the exact-integer dot (one rounding where it
    // passes 2^24), then acc += fa * (scale * x scale) and acc += bias * x group sum.
    for (int rt = 0; rt < RT; rt++) {
      const int64_t si = ((t0 + rt) * gpr + g) * 16;
      const __m512 sw = load_scales16<SD>(w.scales, si, 0xffff), bw = load_scales16<SD>(w.biases, si, 0xffff);
      for (int m = 0; m < MB; m++) {
        __m512i d[NP];  // the plane sums
        for (int p = 0; p < NP; p++) d[p] = split ? _mm512_add_epi32(a[rt][m][2 * p], a[rt][m][2 * p + 1]) : a[rt][m][p];
        __m512 fa;
        if (NP == 3)  // |a2| <= 128 * 255 * 128 < 2^24: exact in f32; a2 << 16 could pass 2^31
          fa = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d[0]), _mm512_set1_ps(65536.f),
                               _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_slli_epi32(d[1], 8), d[2])));
        else if (NP == 2)  // |d1| <= 128 * 255 * 128, so d1 << 8 stays in i32
          fa = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_slli_epi32(d[0], 8), d[1]));
        else
          fa = _mm512_cvtepi32_ps(d[0]);
        acc[rt][m] = _mm512_fmadd_ps(fa, _mm512_mul_ps(sw, _mm512_set1_ps(sx[m * gpr + g])), acc[rt][m]);
        acc[rt][m] = _mm512_fmadd_ps(bw, _mm512_set1_ps(xsum[m * gpr + g]), acc[rt][m]);
      }
    }
  }
  for (int rt = 0; rt < RT; rt++) {
    const int64_t n = (t0 + rt) * 16;
    const __m512 b = bias ? _mm512_loadu_ps(bias + n) : _mm512_setzero_ps();
    for (int m = 0; m < MB; m++) _mm512_storeu_ps(y + m * N + n, _mm512_add_ps(acc[rt][m], b));
  }
}

// Tiles [t0, t1) for MB x rows: kTilesPerCall at a time, then one at a time.
template <int BITS, int SD, int NP, int MB>
static void gemv_tiles_range(const int8_t* planes, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                             const float* bias, float* y, int64_t N, int64_t t0, int64_t t1) {
  constexpr int RT = kTilesPerCall<NP, MB>;
  int64_t t = t0;
  for (; t + RT <= t1; t += RT) gemv_tiles_kernel<BITS, SD, NP, MB, RT>(planes, sx, xsum, K, w, bias, y, N, t);
  for (; t < t1; t++) gemv_tiles_kernel<BITS, SD, NP, MB, 1>(planes, sx, xsum, K, w, bias, y, N, t);
}

// x rows per kernel call: 8, or 4 with three digit planes (registers).
template <int NP>
constexpr int kTilesXBlock = NP == 3 ? 4 : 8;

template <int BITS, int SD, int NP>
static void gemv_tiles_blocks(const int8_t* planes, const float* sx, const float* xsum, int64_t M, int64_t K, const WeightRef& w,
                              const float* bias, float* y, int64_t N, int64_t t0, int64_t t1) {
  const int64_t gpr = K / w.group;
  for (int64_t m0 = 0; m0 < M; m0 += kTilesXBlock<NP>) {
    const int64_t mb = std::min<int64_t>(kTilesXBlock<NP>, M - m0);
    const int8_t* pl = planes + m0 * NP * K;
    const float *s = sx + m0 * gpr, *xs = xsum + m0 * gpr;
    float* yo = y + m0 * N;
    switch (mb) {
      case 1: gemv_tiles_range<BITS, SD, NP, 1>(pl, s, xs, K, w, bias, yo, N, t0, t1); break;
      case 2: gemv_tiles_range<BITS, SD, NP, 2>(pl, s, xs, K, w, bias, yo, N, t0, t1); break;
      case 3: gemv_tiles_range<BITS, SD, NP, 3>(pl, s, xs, K, w, bias, yo, N, t0, t1); break;
      case 4: gemv_tiles_range<BITS, SD, NP, 4>(pl, s, xs, K, w, bias, yo, N, t0, t1); break;
      default:
        if constexpr (kTilesXBlock<NP> > 4) {
          switch (mb) {
            case 5: gemv_tiles_range<BITS, SD, NP, 5>(pl, s, xs, K, w, bias, yo, N, t0, t1); break;
            case 6: gemv_tiles_range<BITS, SD, NP, 6>(pl, s, xs, K, w, bias, yo, N, t0, t1); break;
            case 7: gemv_tiles_range<BITS, SD, NP, 7>(pl, s, xs, K, w, bias, yo, N, t0, t1); break;
            default: gemv_tiles_range<BITS, SD, NP, 8>(pl, s, xs, K, w, bias, yo, N, t0, t1); break;
          }
        }
        break;
    }
  }
}

// y[M, N] = x . W^T (+ bias) for a kWeightTiles16 weight, 1 <= M <= kGemvMaxM, with NP digit planes of x
// (3: the exact split, 2 / 1: the "fast" / "int8" activations). A row of x holding a non-finite value
// is computed in f32 from the decoded weights instead (which propagates it), each row as it would be
// alone.
static void gemv_tiles(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int np) {
  const int64_t K = w.cols, N = w.rows, gpr = K / w.group;
  static thread_local Scratch s_planes, s_sx, s_xsum;
  int8_t* planes = s_planes.get<int8_t>(size_t(M * np * K));
  float* sx = s_sx.get<float>(size_t(M * gpr));
  float* xsum = s_xsum.get<float>(size_t(M * gpr));
  for (int64_t m = 0; m < M; m++) {
    // Row m's pieces within its x block (gemv_tiles_blocks: blocks of kTilesXBlock rows).
    const int64_t xb = np == 3 ? kTilesXBlock<3> : kTilesXBlock<2>, m0 = m / xb * xb, mb = std::min<int64_t>(xb, M - m0);
    const int pw = 32 / w.bits;  // x bytes per piece
    int8_t* at = planes + m0 * np * K + (m - m0) * np * pw;
    if (!tiles_prepare(x + m * K, K, w.group, w.bits, at, mb * np * pw, sx + m * gpr, np)) {
      if (M > 1) {  // one call per row, so every row is what it would be alone
        for (int64_t r = 0; r < M; r++) gemv_tiles(x + r * K, 1, w, bias, y + r * N, np);
        return;
      }
      parallel_for(N, 64, [&](int64_t n0, int64_t n1) {
        static thread_local Scratch s_w;
        float* wr = s_w.get<float>(size_t(K));
        for (int64_t n = n0; n < n1; n++) {
          dequant_row_range(w, n, 0, K, wr);
          float s = 0.f;
          for (int64_t c = 0; c < K; c++) s += wr[c] * x[c];
          y[n] = bias ? s + bias[n] : s;
        }
      });
      return;
    }
    // Exact f32 group sums of x, as the row-layout GEMV computes them.
    for (int64_t g = 0; g < gpr; g++) {
      const float* xg = x + m * K + g * w.group;
      vf a = vsplat(0.f);
      for (int c = 0; c < w.group; c += VL) a += vload(xg + c);
      xsum[m * gpr + g] = hsum(a);
    }
  }
  const int64_t tiles = N / 16;
  // Grain: >= ~64 KB of codes per task; panel: the tiles a task runs every x block over before moving
  // on (~128 KB, so later blocks read them from L2).
  const int64_t tile_bytes = 16 * K * w.bits / 8;
  const int64_t grain = gemv_task_grain(tiles, (64 * 1024) / tile_bytes, 1);
  const int64_t panel = M > kTilesXBlock<3> ? std::max<int64_t>(4, (128 * 1024) / tile_bytes) : tiles;
  parallel_for(tiles, grain, [&](int64_t a0, int64_t a1) {
    for (int64_t p0 = a0; p0 < a1; p0 += panel) {
      const int64_t p1 = std::min(a1, p0 + panel);
      auto run = [&](auto sdc, auto npc) {
        if (w.bits == 4) gemv_tiles_blocks<4, decltype(sdc)::value, decltype(npc)::value>(planes, sx, xsum, M, K, w, bias, y, N, p0, p1);
        else gemv_tiles_blocks<8, decltype(sdc)::value, decltype(npc)::value>(planes, sx, xsum, M, K, w, bias, y, N, p0, p1);
      };
      auto by_np = [&](auto sdc) {
        if (np == 1) run(sdc, std::integral_constant<int, 1>());
        else if (np == 2) run(sdc, std::integral_constant<int, 2>());
        else run(sdc, std::integral_constant<int, 3>());
      };
      if (w.scale_dtype == kBF16) by_np(std::integral_constant<int, kBF16>());
      else if (w.scale_dtype == kF16) by_np(std::integral_constant<int, kF16>());
      else by_np(std::integral_constant<int, kF32>());
    }
  });
}

#endif  // AVX-512 VNNI
