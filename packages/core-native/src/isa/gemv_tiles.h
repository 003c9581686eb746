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

// The exact split of one x row for the tile kernels: three digit planes (most significant first,
// t = d2 * 65536 + d1 * 256 + d0, the rounding of vnni_prepare) as one piece per code word: for 4-bit
// codes piece j of plane p is elements 8j .. 8j + 7, the even positions then the odd ones (the x values
// of word j's low and high nibbles), 8 bytes at out + j * stride + p * 8; for 8-bit codes elements
// 4j .. 4j + 3, 4 bytes at out + j * stride + p * 4. The kernels interleave the pieces of all rows and
// planes of an x block (stride = rows * planes * piece bytes), so a block's x is one sequential stream:
// with separate planes, 8 rows at K = 8192 were 16 streams of 8 KiB read 8 bytes per step, and the
// 8-row GEMV ran at 0.86x the row layout's instead of 2.2x (bench/layouts-ab.mjs). sx[g]: the group's
// scale (max |x| / T); xsum[g]: the f32 group sum of x, added lane by lane as the row-layout GEMV does.
// The integer activations ("fast" / "int8") take tiles_prepare_int instead. Returns false when x holds
// a non-finite value.
static bool tiles_prepare_exact(const float* x, int64_t K, int G, int bits, int8_t* out, int64_t stride, float* sx, float* xsum) {
  const int64_t gpr = K / G;
  const __m512 inf = _mm512_set1_ps(INFINITY);
  const __m512i tmax = _mm512_set1_epi32(kPlaneT), tmin = _mm512_set1_epi32(-kPlaneT);
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
    sx[g] = m / float(kPlaneT);
    const __m512 inv = _mm512_set1_ps(m > 0.f ? float(kPlaneT) / m : 0.f);
    vf sum = vsplat(0.f);
    for (int c = 0; c < G; c += 16) {
      sum += vload(xg + c);
      __m512i t = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xg + c), inv));
      t = _mm512_min_epi32(_mm512_max_epi32(t, tmin), tmax);
      __m512i d[3];
      plane_digits(t, d[0], d[1], d[2]);
      if (bits == 4) {
        const int64_t j = (g * G + c) / 8;
        for (int p = 0; p < 3; p++) {
          const __m128i b = _mm_shuffle_epi8(_mm512_cvtepi32_epi8(d[p]), _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15));
          _mm_storel_epi64(reinterpret_cast<__m128i*>(out + j * stride + p * 8), b);
          _mm_storel_epi64(reinterpret_cast<__m128i*>(out + (j + 1) * stride + p * 8), _mm_unpackhi_epi64(b, b));
        }
      } else {
        const int64_t j = (g * G + c) / 4;
        for (int p = 0; p < 3; p++) {
          alignas(16) int32_t b[4];
          _mm_store_si128(reinterpret_cast<__m128i*>(b), _mm512_cvtepi32_epi8(d[p]));
          for (int i = 0; i < 4; i++) std::memcpy(out + (j + i) * stride + p * 4, &b[i], 4);
        }
      }
    }
    xsum[g] = hsum(sum);
  }
  return true;
}

// Lane g of the result: the reduction (op: max or add) of the 16 lanes of v[g], for 16 vectors at once.
// A fixed tree of 15 vector ops and 30 shuffles instead of 16 horizontal reductions (each a chain of
// 15 dependent steps, the bulk of tiles_prepare_int's time per group before): pairs of vectors fold
// their 256-bit halves, then 128-bit quarters, then lane pairs twice, leaving the 16 results in a fixed
// lane order that one permute puts in group order. The order of the additions is fixed too, so a
// group's sum does not depend on the call (it differs from the row layout's sequential sum by rounding).
template <class Op>
static inline __m512 reduce16x16(const __m512 (&v)[16], Op op) {
  __m512 a[8], b[4], c[2];
  for (int i = 0; i < 8; i++)  // [v_2i lanes 0-7 (+) 8-15 | v_2i+1 ...]
    a[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44), _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  for (int i = 0; i < 4; i++)  // one 128-bit quarter per vector: 4 partial sums each
    b[i] = op(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x88), _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; i++)  // two partials per vector and quarter
    c[i] = op(_mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0x88), _mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0xDD));
  const __m512 r = op(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xDD));
  // Which vector each lane of r holds, found once by running the tree on v[g] = g.
  static const __m512i order = [] {
    __m512 id[16];
    for (int g = 0; g < 16; g++) id[g] = _mm512_set1_ps(float(g));
    __m512 aa[8], bb[4], cc[2];
    auto take = [](__m512 p, __m512 q) { return _mm512_max_ps(p, q); };
    for (int i = 0; i < 8; i++) aa[i] = take(_mm512_shuffle_f32x4(id[2 * i], id[2 * i + 1], 0x44), _mm512_shuffle_f32x4(id[2 * i], id[2 * i + 1], 0xEE));
    for (int i = 0; i < 4; i++) bb[i] = take(_mm512_shuffle_f32x4(aa[2 * i], aa[2 * i + 1], 0x88), _mm512_shuffle_f32x4(aa[2 * i], aa[2 * i + 1], 0xDD));
    for (int i = 0; i < 2; i++) cc[i] = take(_mm512_shuffle_ps(bb[2 * i], bb[2 * i + 1], 0x88), _mm512_shuffle_ps(bb[2 * i], bb[2 * i + 1], 0xDD));
    alignas(64) float lane[16];
    _mm512_store_ps(lane, take(_mm512_shuffle_ps(cc[0], cc[1], 0x88), _mm512_shuffle_ps(cc[0], cc[1], 0xDD)));
    alignas(64) int32_t idx[16];
    for (int l = 0; l < 16; l++) idx[int(lane[l])] = l;
    return _mm512_load_si512(idx);
  }();
  return _mm512_permutexvar_ps(order, r);
}

// tiles_prepare_exact for the integer activations (NP = 1: "int8", 2: "fast"): the same pieces, the same
// rounding of x (so the same integers t and group scales sx), and the f32 group sums xsum too, in ~a third
// of the time (a batched decode step prepares ~1,500 x rows of 2-8 K values: ~3 ms of an 8-sequence
// Gemma 3n step before). Groups go 16 at a time: their maxima and sums reduce together (reduce16x16) and
// their scales divide as one vector; then 32 values at a time are split into even / odd positions (the
// piece order), narrowed to i16 and the digits of both planes packed to bytes, so that each 128-bit
// lane is one piece's bytes of every plane, stored whole.
static bool tiles_prepare_int(const float* x, int64_t K, int G, int bits, int8_t* out, int64_t stride, float* sx, float* xsum, int NP) {
  const int64_t gpr = K / G;
  const __m512 inf = _mm512_set1_ps(INFINITY);
  const int T = NP == 2 ? 32639 : 127;
  const __m512i tmax = _mm512_set1_epi32(T), tmin = _mm512_set1_epi32(-T);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i c128 = _mm512_set1_epi16(128), c255 = _mm512_set1_epi16(255);
  // 8-bit codes: a lane of packs(d1, d0) is [d1 of pieces L, L+4 | d0 of pieces L, L+4] (4 bytes each):
  // regroup to [piece L: d1 d0 | piece L + 4: d1 d0].
  const __m512i regroup8 = _mm512_set4_epi32(0x0F0E0D0C, 0x07060504, 0x0B0A0908, 0x03020100);  // bytes 0-3, 8-11, 4-7, 12-15
  for (int64_t gb = 0; gb < gpr; gb += 16) {
    const int ng = int(std::min<int64_t>(16, gpr - gb));
    __m512 mx[16], sum[16];
    __mmask16 bad = 0;
    for (int i = 0; i < 16; i++) {
      mx[i] = sum[i] = _mm512_setzero_ps();
      if (i >= ng) continue;
      const float* xg = x + (gb + i) * G;
      for (int c = 0; c < G; c += 16) {
        const __m512 v = _mm512_loadu_ps(xg + c), a = _mm512_abs_ps(v);
        bad |= _mm512_cmp_ps_mask(a, inf, _CMP_NLT_UQ);  // |x| >= inf, or NaN
        mx[i] = _mm512_max_ps(mx[i], a);
        sum[i] = _mm512_add_ps(sum[i], v);
      }
    }
    if (bad) return false;
    const __mmask16 gm = __mmask16((1u << ng) - 1u);
    const __m512 m = reduce16x16(mx, [](__m512 p, __m512 q) { return _mm512_max_ps(p, q); });
    _mm512_mask_storeu_ps(xsum + gb, gm, reduce16x16(sum, [](__m512 p, __m512 q) { return _mm512_add_ps(p, q); }));
    _mm512_mask_storeu_ps(sx + gb, gm, _mm512_div_ps(m, _mm512_set1_ps(float(T))));
    alignas(64) float inv[16];  // T / max, or 0 for an all-zero group
    _mm512_store_ps(inv, _mm512_maskz_div_ps(_mm512_cmp_ps_mask(m, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_set1_ps(float(T)), m));
    for (int i = 0; i < ng; i++) {
      const __m512 s = _mm512_set1_ps(inv[i]);
      for (int c = 0; c < G; c += 32) {
        const int64_t e = (gb + i) * G + c;  // element index of these 32 values
        __m512i ta = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + e), s));
        __m512i tb = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + e + 16), s));
        ta = _mm512_min_epi32(_mm512_max_epi32(ta, tmin), tmax);
        tb = _mm512_min_epi32(_mm512_max_epi32(tb, tmin), tmax);
        // i16 lanes: 4-bit codes, lane L = [the even then the odd values of piece L] (pieces of 8);
        // 8-bit codes, lane L = [piece L, piece L + 4] (pieces of 4, natural order).
        const __m512i t = bits == 4 ? _mm512_packs_epi32(_mm512_permutex2var_epi32(ta, even, tb), _mm512_permutex2var_epi32(ta, odd, tb))
                                    : _mm512_packs_epi32(ta, tb);
        __m512i b;  // the bytes: per lane [plane 0 | plane 1] (NP = 2) or [plane 0 | a copy] (NP = 1)
        if (NP == 2) {
          const __m512i d0 = _mm512_sub_epi16(_mm512_and_si512(_mm512_add_epi16(t, c128), c255), c128);
          const __m512i d1 = _mm512_srai_epi16(_mm512_sub_epi16(t, d0), 8);
          b = _mm512_packs_epi16(d1, d0);
          if (bits == 8) b = _mm512_shuffle_epi8(b, regroup8);
        } else {
          b = _mm512_packs_epi16(t, t);
        }
        const __m128i q[4] = {_mm512_castsi512_si128(b), _mm512_extracti32x4_epi32(b, 1), _mm512_extracti32x4_epi32(b, 2), _mm512_extracti32x4_epi32(b, 3)};
        if (bits == 4) {
          const int64_t j = e / 8;  // this block's first piece
          for (int L = 0; L < 4; L++) {
            if (NP == 2) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (j + L) * stride), q[L]);
            else _mm_storel_epi64(reinterpret_cast<__m128i*>(out + (j + L) * stride), q[L]);
          }
        } else {
          const int64_t j = e / 4;
          for (int L = 0; L < 4; L++) {
            if (NP == 2) {
              _mm_storel_epi64(reinterpret_cast<__m128i*>(out + (j + L) * stride), q[L]);
              _mm_storel_epi64(reinterpret_cast<__m128i*>(out + (j + L + 4) * stride), _mm_unpackhi_epi64(q[L], q[L]));
            } else {  // [piece L (4 bytes), piece L + 4 (4 bytes), copies]
              const int32_t lo = _mm_cvtsi128_si32(q[L]), hi = _mm_extract_epi32(q[L], 1);
              std::memcpy(out + (j + L) * stride, &lo, 4);
              std::memcpy(out + (j + L + 4) * stride, &hi, 4);
            }
          }
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

// y[m][16 t + lane] for the RT tiles t0 .. t0 + RT - 1 and MB prepared x rows (planes: their pieces as tiles_prepare_*
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

// y_j[M, N_j] = x . W_j^T (+ bias_j) for n kWeightTiles16 weights that share x and its shape (the same
// cols, bits, group and scale dtype: the q / k / v or gate / up projections of a layer), 1 <= M <=
// kGemvMaxM, with NP digit planes of x (3: the exact split, 2 / 1: the "fast" / "int8" activations).
// One pass: x is prepared once and one parallel region runs over the tiles of all n weights in turn, so a
// thread that finishes its share of one weight goes on into the next instead of waiting at a region's
// end (a decode step makes ~380 GEMVs; three or four small ones in a row cost ~25 % more than one
// covering the same rows, bench/shared-gemv.mjs). Each tile's result does not depend on which call or
// task ran it, so every y_j is bit for bit what gemv_tiles(x, M, W_j, ...) alone gives. A row of x
// holding a non-finite value is computed in f32 from the decoded weights instead (which propagates it),
// each row as it would be alone.
struct TilesJob {
  const WeightRef* w;
  const float* bias;
  float* y;
};

static void gemv_tiles_many(const float* x, int64_t M, const TilesJob* jobs, int n, int np) {
  const WeightRef& w0 = *jobs[0].w;
  const int64_t K = w0.cols, gpr = K / w0.group;
  static thread_local Scratch s_planes, s_sx, s_xsum;
  int8_t* planes = s_planes.get<int8_t>(size_t(M * np * K));
  float* sx = s_sx.get<float>(size_t(M * gpr));
  float* xsum = s_xsum.get<float>(size_t(M * gpr));
  for (int64_t m = 0; m < M; m++) {
    // Row m's pieces within its x block (gemv_tiles_blocks: blocks of kTilesXBlock rows).
    const int64_t xb = np == 3 ? kTilesXBlock<3> : kTilesXBlock<2>, m0 = m / xb * xb, mb = std::min<int64_t>(xb, M - m0);
    const int pw = 32 / w0.bits;  // x bytes per piece
    int8_t* at = planes + m0 * np * K + (m - m0) * np * pw;
    const bool ok = np < 3 ? tiles_prepare_int(x + m * K, K, w0.group, w0.bits, at, mb * np * pw, sx + m * gpr, xsum + m * gpr, np)
                           : tiles_prepare_exact(x + m * K, K, w0.group, w0.bits, at, mb * np * pw, sx + m * gpr, xsum + m * gpr);
    if (!ok) {
      for (int j = 0; j < n; j++) {
        const WeightRef& w = *jobs[j].w;
        const int64_t N = w.rows;
        float* y = jobs[j].y;
        const float* bias = jobs[j].bias;
        if (M > 1) {  // one call per row, so every row is what it would be alone
          for (int64_t r = 0; r < M; r++) {
            const TilesJob one{&w, bias, y + r * N};
            gemv_tiles_many(x + r * K, 1, &one, 1, np);
          }
          continue;
        }
        parallel_for(N, 64, [&](int64_t n0, int64_t n1) {
          static thread_local Scratch s_w;
          float* wr = s_w.get<float>(size_t(K));
          for (int64_t r = n0; r < n1; r++) {
            dequant_row_range(w, r, 0, K, wr);
            float s = 0.f;
            for (int64_t c = 0; c < K; c++) s += wr[c] * x[c];
            y[r] = bias ? s + bias[r] : s;
          }
        });
      }
      return;
    }
  }
  // The tiles of all weights numbered one after another: weight j's are [first[j], first[j + 1]).
  int64_t first[kMaxSharedGemv + 1] = {0};
  for (int j = 0; j < n; j++) first[j + 1] = first[j] + jobs[j].w->rows / 16;
  const int64_t tiles = first[n];
  // Grain: >= ~64 KB of codes per task; panel: the tiles a task runs every x block over before moving
  // on (~128 KB, so later blocks read them from L2).
  const int64_t tile_bytes = 16 * K * w0.bits / 8;
  const int64_t grain = gemv_task_grain(tiles, (64 * 1024) / tile_bytes, 1);
  const int64_t panel = M > kTilesXBlock<3> ? std::max<int64_t>(4, (128 * 1024) / tile_bytes) : tiles;
  parallel_for(tiles, grain, [&](int64_t a0, int64_t a1) {
    for (int64_t p0 = a0; p0 < a1; p0 += panel) {
      const int64_t p1 = std::min(a1, p0 + panel);
      // The part of [p0, p1) in each weight, in that weight's own tile numbers.
      for (int j = 0; j < n; j++) {
        const int64_t t0 = std::max(p0, first[j]), t1 = std::min(p1, first[j + 1]);
        if (t0 >= t1) continue;
        const WeightRef& w = *jobs[j].w;
        // Where this range goes on into the next weight, the start of its first tile there: the
        // kernels prefetch ahead in address order, which runs off this weight's end instead.
        if (t1 == first[j + 1] && t1 < p1) {
          const uint8_t* next = jobs[j + 1].w->data;
          for (int64_t b = 0; b < kTilesPrefetch; b += 64) __builtin_prefetch(next + b, 0, 3);
        }
        auto run = [&](auto sdc, auto npc) {
          constexpr int SD = decltype(sdc)::value, NP = decltype(npc)::value;
          if (w.bits == 4) gemv_tiles_blocks<4, SD, NP>(planes, sx, xsum, M, K, w, jobs[j].bias, jobs[j].y, w.rows, t0 - first[j], t1 - first[j]);
          else gemv_tiles_blocks<8, SD, NP>(planes, sx, xsum, M, K, w, jobs[j].bias, jobs[j].y, w.rows, t0 - first[j], t1 - first[j]);
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
    }
  });
}

// y[M, N] = x . W^T (+ bias) for one kWeightTiles16 weight (gemv_tiles_many with n = 1).
static void gemv_tiles(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int np) {
  const TilesJob job{&w, bias, y};
  gemv_tiles_many(x, M, &job, 1, np);
}

// kernels.h KernelTable::gemv_shared: the shared-x GEMV above where every weight is tiled and alike.
[[maybe_unused]] static bool gemv_shared(const float* x, int64_t M, const WeightRef* ws, const float* const* biases, float* const* ys, int n, int planes) {
  if (M < 1 || M > kGemvMaxM || n < 1 || n > kMaxSharedGemv) return false;
  const WeightRef& w0 = ws[0];
  TilesJob jobs[kMaxSharedGemv];
  for (int j = 0; j < n; j++) {
    const WeightRef& w = ws[j];
    if (w.layout != kWeightTiles16 || w.dtype != kQAffine || w.cols != w0.cols || w.bits != w0.bits || w.group != w0.group ||
        w.scale_dtype != w0.scale_dtype)
      return false;
    jobs[j] = {&w, biases[j], ys[j]};
  }
  // The digit planes each matmul alone would take (matmul_q8act: integer activations only where
  // q8act_gemv_takes, else the exact split).
  gemv_tiles_many(x, M, jobs, n, planes != 0 && q8act_gemv_takes(w0) ? planes : 3);
  return true;
}

#endif  // AVX-512 VNNI
