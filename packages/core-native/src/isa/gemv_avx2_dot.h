// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

#if defined(__AVX2__) && MLX_VL == 8
// ---- AVX2 integer-dot GEMV for 4-bit weights (the avx2 variant) ----
// The same exact 3-piece split of x as the VNNI path (kPlaneT, plane_digits), with the u8 x s8 dot
// product done by vpmaddubsw (u8 x s8 pairs -> s16) and vpmaddwd with ones (s16 pairs -> s32). Bounds:
// a vpmaddubsw pair is <= 2 * 15 * 128 = 3840 (no s16 saturation for 4-bit codes), the low + high nibble
// sum <= 7680, a s32 lane (8 codes) <= 15360, and the Horner combination (a2 << 16) + (a1 << 8) + a0
// <= 15360 * 65793 < 2^31. (8-bit codes would saturate vpmaddubsw, 2 * 255 * 128 > 32767; the avx2 q8
// f32 path already runs near read bandwidth, so 8-bit stays there.)
// Plane layout: per 32-byte chunk of packed codes (64 codes) the planes are [d2 | d1 | d0], 64 bytes
// each, and each plane is [32 even-position elements | 32 odd-position elements], matching the low /
// high nibble vectors of the chunk.
constexpr int kQ4Chunk = 64;  // codes per 32-byte chunk

// Both row walks below take groups 8 at a time: their W scales times the x group scales form one f32
// vector f per x row, and each chunk's i32 lanes (8 consecutive codes each, always of one group) pick
// their group's factor from f with one permute. For chunk i of such a block, lane j's group is
// (i * 64 + 8 j) / G: a constant table (no start-up code), so the permute's indices are one load
// instead of four vector instructions per chunk.
struct Q4ChunkGroupIdx {
  alignas(32) int32_t v[16][8];
};
static constexpr Q4ChunkGroupIdx q4_chunk_group_idx(int shift) {
  Q4ChunkGroupIdx t{};
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 8; j++) t.v[i][j] = (i * kQ4Chunk + 8 * j) >> shift;
  return t;
}
static constexpr Q4ChunkGroupIdx kQ4GroupIdx32 = q4_chunk_group_idx(5), kQ4GroupIdx64 = q4_chunk_group_idx(6),
                                 kQ4GroupIdx128 = q4_chunk_group_idx(7);
static inline const Q4ChunkGroupIdx& q4_group_idx(int G) { return G == 32 ? kQ4GroupIdx32 : G == 64 ? kQ4GroupIdx64 : kQ4GroupIdx128; }
static inline __m256i q4_chunk_idx(const Q4ChunkGroupIdx& t, int64_t i) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(t.v[i]));
}


// Low bytes of the 8 i32 lanes of d (each in [-128, 127]) -> 8 bytes at p.
static inline void store_lanes_i8(int8_t* p, vi d) {
  const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                        0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i b = _mm256_shuffle_epi8((__m256i)d, pick);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p),
                   _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
}

// Writes the digit planes of one x row (K % 64 == 0, group 32/64/128). Returns false when x holds a
// non-finite value (the caller then uses the f32 path, which propagates it).
static bool avx2_q4_prepare(const float* x, int64_t K, int G, int8_t* planes, float* sx) {
  const int64_t gpr = K / G;
  const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_set1_ps(INFINITY);
  const __m256i tmax = _mm256_set1_epi32(kPlaneT), tmin = _mm256_set1_epi32(-kPlaneT);
  for (int64_t g = 0; g < gpr; g++) {
    const float* xg = x + g * G;
    __m256 mx = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int c = 0; c < G; c += 8) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(xg + c), absm);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));  // |x| >= inf, or NaN
      mx = _mm256_max_ps(mx, a);
    }
    if (_mm256_movemask_ps(bad)) return false;
    const float m = hmax((vf)mx);
    sx[g] = m / float(kPlaneT);
    const __m256 inv = _mm256_set1_ps(m > 0.f ? float(kPlaneT) / m : 0.f);
    for (int c = 0; c < G; c += 16) {
      const int64_t e = g * G + c;  // element index of this 16-element block
      __m256i ta = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + e), inv));
      __m256i tb = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + e + 8), inv));
      ta = _mm256_min_epi32(_mm256_max_epi32(ta, tmin), tmax);
      tb = _mm256_min_epi32(_mm256_max_epi32(tb, tmin), tmax);
      // Even / odd elements of the 16, in order: in-lane shuffle, then fix the 64-bit block order.
      const __m256 fa = _mm256_castsi256_ps(ta), fb = _mm256_castsi256_ps(tb);
      const __m256i ev = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(fa, fb, 0x88)), 0xd8);
      const __m256i od = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(fa, fb, 0xdd)), 0xd8);
      int8_t* base = planes + (e / kQ4Chunk) * 3 * kQ4Chunk + (e % kQ4Chunk) / 2;
      vi d2, d1, d0;
      plane_digits((vi)ev, d2, d1, d0);
      store_lanes_i8(base + 0 * 64, d2);
      store_lanes_i8(base + 1 * 64, d1);
      store_lanes_i8(base + 2 * 64, d0);
      plane_digits((vi)od, d2, d1, d0);
      store_lanes_i8(base + 0 * 64 + 32, d2);
      store_lanes_i8(base + 1 * 64 + 32, d1);
      store_lanes_i8(base + 2 * 64 + 32, d0);
    }
  }
  return true;
}

// 8 consecutive f32 values from element i of an array in dtype SD; n < 8 loads n and zero-fills.
template <int SD>
static inline __m256 load8_f(const uint8_t* p, int64_t i, int n) {
  if (n < 8) {
    float t[8] = {};
    for (int j = 0; j < n; j++) t[j] = scale_t<SD>(p, i + j);
    return _mm256_loadu_ps(t);
  }
  if (SD == kF32) return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + i);
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i));
  if (SD == kBF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}

// AVX2 q4 row: row n of W against MB prepared x rows. One row at a time: W is read as one sequential
// stream per thread, and the x planes (3 bytes per element) stay in L1/L2 (measured faster than sharing
// plane loads across several rows). Groups are taken 8 at a time (see Q4ChunkGroupIdx).
template <int SD, int MB>
static void avx2_q4_row(const int8_t* planes, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                         const float* bias, float* y, int64_t N, int64_t n) {
  constexpr int CW = kQ4Chunk, PB = 3 * CW;
  const int G = w.group;
  const int64_t gpr = K / G, row_bytes = K / 2, xplane = (K / CW) * PB;
  const uint8_t* row = w.data + n * row_bytes;
  TilePrefetch pref(row, gemv_prefetch_distance(1, row_bytes));
  const Q4ChunkGroupIdx& gidx = q4_group_idx(G);
  const __m256i nib = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1), k256 = _mm256_set1_epi16(256);
  __m256 acc[MB], acc2[MB];  // chunks alternate between the two sets (two FMA dependency chains)
  for (int m = 0; m < MB; m++) acc[m] = acc2[m] = _mm256_setzero_ps();
  for (int64_t gb = 0; gb < gpr; gb += 8) {
    const int ng = int(std::min<int64_t>(8, gpr - gb));
    const __m256 s = load8_f<SD>(w.scales, n * gpr + gb, ng);
    __m256 f[MB];
    for (int m = 0; m < MB; m++)
      f[m] = _mm256_mul_ps(s, load8_f<kF32>(reinterpret_cast<const uint8_t*>(sx), m * gpr + gb, ng));
    const int64_t nch = int64_t(ng) * G / CW, c0 = gb * G;  // chunks of this block, its first code
    const uint8_t* wq = row + c0 / 2;
    const int8_t* P[MB];
    for (int m = 0; m < MB; m++) P[m] = planes + m * xplane + (c0 / CW) * PB;
    // Chunk i of the block (CW codes, 32 bytes) into A.
    auto chunk = [&](int64_t i, __m256 (&A)[MB]) __attribute__((always_inline)) {
      const __m256i idx = q4_chunk_idx(gidx, i);
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq + i * (CW / 2)));
      const __m256i lo = _mm256_and_si256(v, nib);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
      for (int m = 0; m < MB; m++) {
        const __m256i* p = reinterpret_cast<const __m256i*>(P[m] + i * PB);
#if defined(__AVXVNNI__)
        // AVX-VNNI (the avx2vnni variant): u8 x s8 dot products straight into i32, one chain per
        // digit plane, a = (((a2 << 8) + a1) << 8) + a0 as in the AVX-512 VNNI path.
        const __m256i z = _mm256_setzero_si256();
        const __m256i p0 = _mm256_loadu_si256(p + 0), p1 = _mm256_loadu_si256(p + 1);
        const __m256i p2 = _mm256_loadu_si256(p + 2), p3 = _mm256_loadu_si256(p + 3);
        const __m256i p4 = _mm256_loadu_si256(p + 4), p5 = _mm256_loadu_si256(p + 5);
        const __m256i a2 = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(z, lo, p0), hi, p1);
        const __m256i a1 = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(z, lo, p2), hi, p3);
        const __m256i a0 = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(z, lo, p4), hi, p5);
        const __m256i a = _mm256_add_epi32(_mm256_slli_epi32(_mm256_add_epi32(_mm256_slli_epi32(a2, 8), a1), 8), a0);
        (void)ones;
        (void)k256;
#else
        // Per digit plane: low nibbles x even elements + high nibbles x odd elements, in s16.
        const __m256i s2 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256(p + 0)),
                                            _mm256_maddubs_epi16(hi, _mm256_loadu_si256(p + 1)));
        const __m256i s1 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256(p + 2)),
                                            _mm256_maddubs_epi16(hi, _mm256_loadu_si256(p + 3)));
        const __m256i s0 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256(p + 4)),
                                            _mm256_maddubs_epi16(hi, _mm256_loadu_si256(p + 5)));
        // Horner in i32: a = (((a2 << 8) + a1) << 8) + a0, the first shift folded into vpmaddwd.
        __m256i a = _mm256_add_epi32(_mm256_madd_epi16(s2, k256), _mm256_madd_epi16(s1, ones));
        a = _mm256_add_epi32(_mm256_slli_epi32(a, 8), _mm256_madd_epi16(s0, ones));
#endif
        A[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), _mm256_permutevar8x32_ps(f[m], idx), A[m]);
      }
    };
    int64_t i = 0;
    for (; i + 2 <= nch; i += 2) {
      pref.advance(CW);  // see TilePrefetch
      chunk(i, acc);
      chunk(i + 1, acc2);
    }
    if (i < nch) {
      pref.advance(CW / 2);
      chunk(i, acc);
    }
  }
  for (int m = 0; m < MB; m++) {
    const float v =
        hsum((vf)_mm256_add_ps(acc[m], acc2[m])) + scales_dot<SD>(w.biases, n * gpr, xsum + m * gpr, gpr);
    y[m * N + n] = bias ? v + bias[n] : v;
  }
}
// ---- AVX2 q4 GEMV with 16-bit integer activations (the "fast" / "int8" matmul precisions) ----
// x per group as one s16 value per element, t = round_half_even(f32(x * f32(T / max|x|))), T = 32639
// ("fast", the bound of the VNNI path's two digit planes) or 127 ("int8"); dx = max / T. The codes are
// never widened in memory: a 32-byte chunk of packed codes read as 16 u16 lanes holds codes 4i..4i+3 in
// lane i's four nibbles, so four shift/and steps give four vectors of u16 codes (vector k, lane i = code
// 4i + k) and x is stored in the same order; vpmaddwd of each against its x vector sums two products per
// i32 lane, and the four sums give each i32 lane j the dot product of codes 8j..8j+7 — the same lanes as
// the exact path, with 4 multiplies per 64 codes instead of 9 (measured 1.6x its rate where the kernel is
// core-bound). Bounds: 8 * 15 * 32767 < 2^22 per lane.
constexpr int kS16Fast = 32639, kS16Int8 = 127;

// Writes one x row's s16 activations in chunk order (K % 64 == 0; xs[c0 + 16k + i] = t[c0 + 4i + k]).
// Returns false when x holds a non-finite value (the caller then uses the exact path, which propagates it).
static bool avx2_q4_prepare_s16(const float* x, int64_t K, int G, int T, int16_t* xs, float* sx) {
  const int64_t gpr = K / G;
  const __m256i pair_perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t g = 0; g < gpr; g++) {
    const float* xg = x + g * G;
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 inf = _mm256_set1_ps(INFINITY);
    __m256 mx = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int c = 0; c < G; c += 8) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(xg + c), absm);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));  // |x| >= inf, or NaN
      mx = _mm256_max_ps(mx, a);
    }
    if (_mm256_movemask_ps(bad)) return false;
    const float m = hmax((vf)mx);
    sx[g] = m / float(T);
    const __m256 inv = _mm256_set1_ps(m > 0.f ? float(T) / m : 0.f);
    const __m256i tmax = _mm256_set1_epi32(T), tmin = _mm256_set1_epi32(-T);
    auto quant8 = [&](int c) {  // ties to even
      const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + c), inv));
      return _mm256_min_epi32(_mm256_max_epi32(q, tmin), tmax);
    };
    // 16 elements at a time: t[r + 4i + k] (i, k < 4; r = their offset in the chunk, a multiple of 16)
    // go to xs[16k + r/4 + i], four 64-bit stores. Permuting each 8 as (0,4,1,5,2,6,3,7), packing the
    // two to s16 (per 128-bit lane) and swapping the middle words of each lane leaves k = 0, 1 in the
    // low lane's two halves and k = 2, 3 in the high lane's.
    for (int c = 0; c < G; c += 16) {
      const __m256i p0 = _mm256_permutevar8x32_epi32(quant8(c), pair_perm), p1 = _mm256_permutevar8x32_epi32(quant8(c + 8), pair_perm);
      const __m256i s = _mm256_shuffle_epi32(_mm256_packs_epi32(p0, p1), _MM_SHUFFLE(3, 1, 2, 0));
      const int64_t e = g * G + c, r = e % kQ4Chunk;
      int16_t* base = xs + (e - r) + r / 4;
      const __m128i lo = _mm256_castsi256_si128(s), hi = _mm256_extracti128_si256(s, 1);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(base), lo);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(base + 16), _mm_unpackhi_epi64(lo, lo));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(base + 32), hi);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(base + 48), _mm_unpackhi_epi64(hi, hi));
    }
  }
  return true;
}

// Row n of W against MB prepared x rows for the integer-activation kernels below: Dot::unpack(v) splits a
// 32-byte chunk of codes (once for all x rows) and Dot::dot(u, m, e) gives x row m's i32 lanes (codes
// 8j .. 8j + 7) for the chunk starting at element e; the group factors as in avx2_q4_row. G (32, 64 or
// 128) is w.group as a constant. (Two or four rows per x load, measured on Zen 1 where loads are 128
// bits wide: no gain / 0.84x; the vector integer multiplier is what bounds this loop.)
template <int SD, int MB, int G, class Dot>
static void avx2_q4_row_int(const Dot& dot, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                            const float* bias, float* y, int64_t N, int64_t n) {
  constexpr int CW = kQ4Chunk;
  const int64_t gpr = K / G, row_bytes = K / 2;
  const uint8_t* row = w.data + n * row_bytes;
  TilePrefetch pref(row, gemv_prefetch_distance(1, row_bytes));
  const Q4ChunkGroupIdx& gidx = q4_group_idx(G);
  __m256 acc[MB], acc2[MB];  // chunks alternate between the two sets (two FMA dependency chains)
  for (int m = 0; m < MB; m++) acc[m] = acc2[m] = _mm256_setzero_ps();
  for (int64_t gb = 0; gb < gpr; gb += 8) {
    const int ng = int(std::min<int64_t>(8, gpr - gb));
    const __m256 s = load8_f<SD>(w.scales, n * gpr + gb, ng);
    __m256 f[MB];  // groups gb .. gb + 7: W scale x x scale, per x row
    for (int m = 0; m < MB; m++)
      f[m] = _mm256_mul_ps(s, load8_f<kF32>(reinterpret_cast<const uint8_t*>(sx), m * gpr + gb, ng));
    const int64_t nch = int64_t(ng) * G / CW, c0 = gb * G;
    const uint8_t* wq = row + c0 / 2;
    // G a multiple of 64: every chunk lies in one group, so its factor is one broadcast (the values the
    // permute would give: bit-identical) instead of an index load and a lane permute.
    alignas(32) float fa[MB][8];
    if constexpr (G % CW == 0)
      for (int m = 0; m < MB; m++) _mm256_store_ps(fa[m], f[m]);
    auto chunk = [&](int64_t i, __m256 (&A)[MB]) __attribute__((always_inline)) {
      const auto u = dot.unpack(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq + i * (CW / 2))));
      for (int m = 0; m < MB; m++) {
        const __m256i a = dot.dot(u, m, c0 + i * CW);
        __m256 fac;
        if constexpr (G % CW == 0) fac = _mm256_broadcast_ss(&fa[m][i * CW / G]);
        else fac = _mm256_permutevar8x32_ps(f[m], q4_chunk_idx(gidx, i));
        A[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), fac, A[m]);
      }
    };
    int64_t i = 0;
    for (; i + 2 <= nch; i += 2) {
      pref.advance(CW);  // see TilePrefetch
      chunk(i, acc);
      chunk(i + 1, acc2);
    }
    if (i < nch) {
      pref.advance(CW / 2);
      chunk(i, acc);
    }
  }
  for (int m = 0; m < MB; m++) {
    const float v =
        hsum((vf)_mm256_add_ps(acc[m], acc2[m])) + scales_dot<SD>(w.biases, n * gpr, xsum + m * gpr, gpr);
    y[m * N + n] = bias ? v + bias[n] : v;
  }
}

// s16 activations (xs: [MB][K], avx2_q4_prepare_s16): four u16 code vectors per chunk, four vpmaddwd.
struct Q4DotS16 {
  const int16_t* xs;
  int64_t K;
  struct Codes { __m256i n[4]; };
  __attribute__((always_inline)) Codes unpack(__m256i v) const {
    const __m256i m4 = _mm256_set1_epi16(0x000f);
    return {{_mm256_and_si256(v, m4), _mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
             _mm256_and_si256(_mm256_srli_epi16(v, 8), m4), _mm256_srli_epi16(v, 12)}};
  }
  __attribute__((always_inline)) __m256i dot(const Codes& u, int m, int64_t e) const {
    const __m256i* p = reinterpret_cast<const __m256i*>(xs + m * K + e);
    return _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(u.n[0], _mm256_loadu_si256(p)), _mm256_madd_epi16(u.n[1], _mm256_loadu_si256(p + 1))),
                            _mm256_add_epi32(_mm256_madd_epi16(u.n[2], _mm256_loadu_si256(p + 2)), _mm256_madd_epi16(u.n[3], _mm256_loadu_si256(p + 3))));
  }
};

template <int SD, int MB, int G>
static void avx2_q4_row_s16(const int16_t* xs, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                            const float* bias, float* y, int64_t N, int64_t n) {
  avx2_q4_row_int<SD, MB, G>(Q4DotS16{xs, K}, sx, xsum, K, w, bias, y, N, n);
}
// ---- AVX2 q4 GEMV with 8-bit activations (the "int8" precision) ----
// The same values as the s16 kernel's T = 127 activations (avx2_q4_prepare_s16 with kS16Int8: same
// scale, same rounding), stored as s8 in the exact path's one-plane order ([32 even | 32 odd] elements
// per 64-element chunk), so one vpmaddubsw multiplies 32 codes: low nibbles x even elements + high
// nibbles x odd ones is, per s16 lane i, codes 4i .. 4i + 3 (bounds: 4 * 15 * 127 = 7620), and
// vpmaddwd by ones gives i32 lane j codes 8j .. 8j + 7 — the s16 kernel's lanes, so the integers and the
// f32 sums are bit for bit those of the s16 kernel with 3 multiplies per 64 codes instead of 4 (on Zen 1
// the vector integer multiplier is the limit: 1.4x its in-cache rate).
static bool avx2_q4_prepare_s8(const float* x, int64_t K, int G, int8_t* xq, float* sx) {
  const int64_t gpr = K / G;
  const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_set1_ps(INFINITY);
  const __m256i tmax = _mm256_set1_epi32(kS16Int8), tmin = _mm256_set1_epi32(-kS16Int8);
  for (int64_t g = 0; g < gpr; g++) {
    const float* xg = x + g * G;
    __m256 mx = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int c = 0; c < G; c += 8) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(xg + c), absm);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));  // |x| >= inf, or NaN
      mx = _mm256_max_ps(mx, a);
    }
    if (_mm256_movemask_ps(bad)) return false;
    const float m = hmax((vf)mx);
    sx[g] = m / float(kS16Int8);
    const __m256 inv = _mm256_set1_ps(m > 0.f ? float(kS16Int8) / m : 0.f);
    for (int c = 0; c < G; c += 16) {
      const int64_t e = g * G + c;  // element index of this 16-element block
      __m256i ta = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + e), inv));  // ties to even
      __m256i tb = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + e + 8), inv));
      ta = _mm256_min_epi32(_mm256_max_epi32(ta, tmin), tmax);
      tb = _mm256_min_epi32(_mm256_max_epi32(tb, tmin), tmax);
      // Even / odd elements of the 16, in order (as avx2_q4_prepare).
      const __m256 fa = _mm256_castsi256_ps(ta), fb = _mm256_castsi256_ps(tb);
      const __m256i ev = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(fa, fb, 0x88)), 0xd8);
      const __m256i od = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(fa, fb, 0xdd)), 0xd8);
      int8_t* base = xq + (e / kQ4Chunk) * kQ4Chunk + (e % kQ4Chunk) / 2;
      store_lanes_i8(base, (vi)ev);
      store_lanes_i8(base + 32, (vi)od);
    }
  }
  return true;
}

// s8 activations (xq: [MB][K], avx2_q4_prepare_s8): low / high nibble bytes per chunk, two vpmaddubsw,
// one vpmaddwd by ones.
struct Q4DotS8 {
  const int8_t* xq;
  int64_t K;
  struct Codes { __m256i lo, hi; };
  __attribute__((always_inline)) Codes unpack(__m256i v) const {
    const __m256i nib = _mm256_set1_epi8(0x0f);
    return {_mm256_and_si256(v, nib), _mm256_and_si256(_mm256_srli_epi16(v, 4), nib)};
  }
  __attribute__((always_inline)) __m256i dot(const Codes& u, int m, int64_t e) const {
    const __m256i* p = reinterpret_cast<const __m256i*>(xq + m * K + e);
    const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(u.lo, _mm256_loadu_si256(p)), _mm256_maddubs_epi16(u.hi, _mm256_loadu_si256(p + 1)));
    return _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
  }
};

template <int SD, int MB, int G>
static void avx2_q4_row_s8(const int8_t* xq, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                           const float* bias, float* y, int64_t N, int64_t n) {
  avx2_q4_row_int<SD, MB, G>(Q4DotS8{xq, K}, sx, xsum, K, w, bias, y, N, n);
}
#endif  // AVX2 integer-dot GEMV
