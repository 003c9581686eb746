// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

#if defined(__AVX512VNNI__) && MLX_VL == 16
// ---- AVX-512 VNNI GEMV for 4- and 8-bit weights (the avx512vnni variant) ----
static inline void plane_digits(__m512i t, __m512i& d2, __m512i& d1, __m512i& d0) {
  vi a2, a1, a0;
  plane_digits((vi)t, a2, a1, a0);
  d2 = (__m512i)a2;
  d1 = (__m512i)a1;
  d0 = (__m512i)a0;
}

// Writes the digit planes of one x row. Per chunk of CW codes (one 64-byte load of packed weights: 128
// codes for 4-bit, 64 for 8-bit) the planes are [d2 | d1 | d0], CW bytes each; for 4-bit each plane is
// [64 even-position elements | 64 odd-position elements], matching the low / high nibble vectors.
// NP < 3 ("fast": 2 planes, T = 32639; "int8": 1 plane, T = 127) rounds x per group to a |t| <= T
// integer instead (t = d1 * 256 + d0, or t = d0): the integer-activation semantics of gemm_q8act.h,
// x[c] ~= (max_g |x| / T) * round(x[c] * T / max_g |x|), for the GEMV of those precisions. The planes of a
// chunk are then [d1 | d0] or [d0].
// Returns false when x holds a non-finite value (the caller then uses the f32 path, which propagates it).
static bool vnni_prepare(const float* x, int64_t K, int G, int bits, int8_t* planes, float* sx, int NP = 3) {
  const int64_t gpr = K / G;
  const int CW = bits == 4 ? 128 : 64;
  const __m512 inf = _mm512_set1_ps(INFINITY);
  const int T = NP == 3 ? kPlaneT : NP == 2 ? 32639 : 127;
  const __m512i tmax = _mm512_set1_epi32(T), tmin = _mm512_set1_epi32(-T);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
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
    for (int c = 0; c < G; c += 32) {
      const int64_t e = g * G + c;  // element index of this 32-element block
      __m512i ta = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + e), inv));
      __m512i tb = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + e + 16), inv));
      ta = _mm512_min_epi32(_mm512_max_epi32(ta, tmin), tmax);
      tb = _mm512_min_epi32(_mm512_max_epi32(tb, tmin), tmax);
      int8_t* base = planes + (e / CW) * NP * CW;
      const int64_t cc = e % CW;
      // Digits of t, most significant first, as NP planes of CW bytes.
      auto put = [&](__m512i t, int64_t off) {
        __m512i d[3];
        if (NP == 3) plane_digits(t, d[0], d[1], d[2]);
        else if (NP == 2) {
          vi a0 = (((vi)t + 128) & 255) - 128;
          d[1] = (__m512i)a0;
          d[0] = (__m512i)(((vi)t - a0) >> 8);
        } else d[0] = t;
        for (int p = 0; p < NP; p++)
          _mm_storeu_si128(reinterpret_cast<__m128i*>(base + p * CW + off), _mm512_cvtepi32_epi8(d[p]));
      };
      if (bits == 4) {
        const int64_t j = cc / 2;
        put(_mm512_permutex2var_epi32(ta, even, tb), j);
        put(_mm512_permutex2var_epi32(ta, odd, tb), 64 + j);
      } else {
        put(ta, cc);
        put(tb, cc + 16);
      }
    }
  }
  return true;
}

// 16 scales (or fewer, masked) from element i of a [.., groups] scale row in dtype SD, as f32.
template <int SD>
static inline __m512 load_scales16(const uint8_t* p, int64_t i, __mmask16 m) {
  if (SD == kF32) return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(p) + i);
  const __m256i h = _mm256_maskz_loadu_epi16(m, p + 2 * i);
  if (SD == kBF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}

// Horizontal sum of 16 lanes in one fixed tree: s_i = a_i + a_(i+8), u_i = s_i + s_(i+4),
// v_i = u_i + u_(i+2), r = v_0 + v_1. Every VNNI GEMV kernel reduces its rows with this tree, so a row's
// result does not depend on which kernel computed it whatever the compiler: _mm512_reduce_add_ps leaves
// its tree to the compiler (GCC 12's is this one: outputs bit-identical to it where the bias is not
// folded, below).
static inline float hsum16(__m512 a) {
  const __m256 s = _mm256_add_ps(_mm512_extractf32x8_ps(a, 0), _mm512_extractf32x8_ps(a, 1));
  const __m128 u = _mm_add_ps(_mm256_extractf128_ps(s, 0), _mm256_extractf128_ps(s, 1));
  const __m128 v = _mm_add_ps(u, _mm_movehl_ps(u, u));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}

// Where the bias half of a VNNI GEMV row goes: with a partial last block of 16 groups (K = 1536: 24
// groups) it is folded into the row's first accumulator, one masked FMA per block, because the vector
// dot over the groups at the row's end (scales_dot) finishes such a tail one group at a time: a fifth of a
// K = 1536 decode GEMV. With whole blocks only, the row-end dot stays: folding measured ~7 % slower at
// K = 4096 and no faster at K = 2048-3072. Every VNNI kernel takes the same choice, so a row's result
// does not depend on the kernel.
static inline bool vnni_fold_bias(int64_t gpr) { return gpr % 16 != 0; }

// The quantized dot product for rows [n, n + R) against MB prepared x rows, over all groups, written to
// out[r][m]: the scale half (codes times x) and the bias half (group biases times the x group sums xsum,
// placed as vnni_fold_bias says), reduced by hsum16. Groups are taken 16 at a time: their
// scales times the x group scales form one f32 vector f, and each chunk's lanes pick their group's
// factor from f with one permute (a lane holds 8 (4-bit) or 4 (8-bit) consecutive codes, always of one
// group). pf: software prefetch distance in bytes. Even and odd chunks accumulate into acc and acc2
// (two FMA chains per row and x row), summed at the end.
template <int BITS, int SD, int MB, int R, int NP = 3>
static inline void vnni_dot(const int8_t* planes, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                            int64_t n, int64_t pf, float (*out)[MB]) {
  constexpr int CW = BITS == 4 ? 128 : 64;  // codes per 64-byte chunk
  constexpr int PB = NP * CW;               // plane bytes per chunk
  constexpr int LC = BITS == 4 ? 8 : 4;     // codes per i32 lane
  const int G = w.group;
  const int64_t gpr = K / G, row_bytes = K * BITS / 8, xplane = (K / CW) * PB;
  const bool fold = vnni_fold_bias(gpr);
  const uint8_t* rows[R];
  for (int r = 0; r < R; r++) rows[r] = w.data + (n + r) * row_bytes;
  TilePrefetch pref(rows[0], pf);
  const __m128i gshift = _mm_cvtsi32_si128(G == 32 ? 5 : G == 64 ? 6 : 7);
  const __m512i lanes = _mm512_setr_epi32(0, LC, 2 * LC, 3 * LC, 4 * LC, 5 * LC, 6 * LC, 7 * LC, 8 * LC, 9 * LC,
                                          10 * LC, 11 * LC, 12 * LC, 13 * LC, 14 * LC, 15 * LC);
  const __m512i nib = _mm512_set1_epi8(0x0f);
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc[R][MB], acc2[R][MB];
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) acc[r][m] = acc2[r][m] = _mm512_setzero_ps();
  for (int64_t gb = 0; gb < gpr; gb += 16) {
    const int ng = int(std::min<int64_t>(16, gpr - gb));
    const __mmask16 gm = __mmask16((1u << ng) - 1u);
    __m512 f[R][MB];
    for (int r = 0; r < R; r++) {
      __builtin_prefetch(w.scales + ((n + R + r) * gpr + gb) * (SD == kF32 ? 4 : 2), 0, 3);
      __builtin_prefetch(w.biases + ((n + R + r) * gpr + gb) * (SD == kF32 ? 4 : 2), 0, 3);
      const __m512 s = load_scales16<SD>(w.scales, (n + r) * gpr + gb, gm);
      for (int m = 0; m < MB; m++) f[r][m] = _mm512_mul_ps(s, _mm512_maskz_loadu_ps(gm, sx + m * gpr + gb));
      if (fold) {
        const __m512 b = load_scales16<SD>(w.biases, (n + r) * gpr + gb, gm);
        for (int m = 0; m < MB; m++) acc[r][m] = _mm512_fmadd_ps(b, _mm512_maskz_loadu_ps(gm, xsum + m * gpr + gb), acc[r][m]);
      }
    }
    const int64_t nch = int64_t(ng) * G / CW;
    for (int64_t i = 0; i < nch; i++) {
      const int64_t c = gb * G + i * CW;
      const __m512i idx = _mm512_srl_epi32(_mm512_add_epi32(_mm512_set1_epi32(int(i * CW)), lanes), gshift);
      const int8_t* P[MB];
      for (int m = 0; m < MB; m++) P[m] = planes + m * xplane + (uint64_t(c) / CW) * PB;
      for (int r = 0; r < R; r++) {
        pref.advance(64);  // see TilePrefetch
        const __m512i v = _mm512_loadu_si512(rows[r] + c * BITS / 8);
        if (BITS == 4) {
          const __m512i lo = _mm512_and_si512(v, nib);
          const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
          for (int m = 0; m < MB; m++) {
            const int8_t* p = P[m];
            __m512i a;
            if (NP == 3) {
              // One chain per digit plane (low and high nibbles), combined as
              // a = (((a2 << 8) + a1) << 8) + a0. |a2| <= 8 * 15 * 128 = 15360, so every step stays in i32.
              // The plane loads are issued together and the three chains are independent: measured ~15 %
              // faster than one Horner chain through vpdpbusd's accumulator when the GEMV is core-bound.
              const __m512i p0 = _mm512_loadu_si512(p + 0), p1 = _mm512_loadu_si512(p + 64);
              const __m512i p2 = _mm512_loadu_si512(p + 128), p3 = _mm512_loadu_si512(p + 192);
              const __m512i p4 = _mm512_loadu_si512(p + 256), p5 = _mm512_loadu_si512(p + 320);
              const __m512i a2 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, p0), hi, p1);
              const __m512i a1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, p2), hi, p3);
              const __m512i a0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, p4), hi, p5);
              a = _mm512_add_epi32(_mm512_slli_epi32(_mm512_add_epi32(_mm512_slli_epi32(a2, 8), a1), 8), a0);
            } else if (NP == 2) {  // a = (a1 << 8) + a0, |a1| <= 15360
              const __m512i p0 = _mm512_loadu_si512(p + 0), p1 = _mm512_loadu_si512(p + 64);
              const __m512i p2 = _mm512_loadu_si512(p + 128), p3 = _mm512_loadu_si512(p + 192);
              const __m512i a1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, p0), hi, p1);
              const __m512i a0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, p2), hi, p3);
              a = _mm512_add_epi32(_mm512_slli_epi32(a1, 8), a0);
            } else {
              a = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, _mm512_loadu_si512(p)), hi, _mm512_loadu_si512(p + 64));
            }
            // Even and odd chunks feed two accumulator sets: two FMA dependency chains per row.
            const __m512 fa = _mm512_cvtepi32_ps(a), fac = _mm512_permutexvar_ps(idx, f[r][m]);
            if (i & 1) acc2[r][m] = _mm512_fmadd_ps(fa, fac, acc2[r][m]);
            else acc[r][m] = _mm512_fmadd_ps(fa, fac, acc[r][m]);
          }
        } else {
          for (int m = 0; m < MB; m++) {
            const int8_t* p = P[m];
            __m512 t;
            if (NP == 3) {
              const __m512i p0 = _mm512_loadu_si512(p + 0), p1 = _mm512_loadu_si512(p + 64);
              const __m512i p2 = _mm512_loadu_si512(p + 128);
              const __m512i a2 = _mm512_dpbusd_epi32(zero, v, p0);
              const __m512i a10 = _mm512_dpbusd_epi32(_mm512_slli_epi32(_mm512_dpbusd_epi32(zero, v, p1), 8), v, p2);
              // 8-bit codes: a2 << 16 could overflow i32 (|a2| <= 4 * 255 * 128), so the top digit plane
              // joins in f32: t = a2 * 65536 + a10 (a2 converts exactly; one rounding, as for 4-bit).
              t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a2), _mm512_set1_ps(65536.f), _mm512_cvtepi32_ps(a10));
            } else if (NP == 2) {  // (a1 << 8) + a0: |a1| <= 130560, so it stays in i32
              const __m512i a1 = _mm512_dpbusd_epi32(zero, v, _mm512_loadu_si512(p));
              t = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_slli_epi32(a1, 8), v, _mm512_loadu_si512(p + 64)));
            } else {
              t = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, v, _mm512_loadu_si512(p)));
            }
            const __m512 fac = _mm512_permutexvar_ps(idx, f[r][m]);
            if (i & 1) acc2[r][m] = _mm512_fmadd_ps(t, fac, acc2[r][m]);
            else acc[r][m] = _mm512_fmadd_ps(t, fac, acc[r][m]);
          }
        }
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) {
      __m512 t = acc[r][m];
      t = _mm512_add_ps(t, acc2[r][m]);
      out[r][m] = hsum16(t);
      if (!fold) out[r][m] += scales_dot<SD>(w.biases, (n + r) * gpr, xsum + m * gpr, gpr);
    }
}

// VNNI tile: whole rows [n, n + R).
template <int BITS, int SD, int MB, int R, int NP = 3>
static void gemv_vnni_tile(const int8_t* planes, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                           const float* bias, float* y, int64_t N, int64_t n) {
  float out[R][MB];
  vnni_dot<BITS, SD, MB, R, NP>(planes, sx, xsum, K, w, n, gemv_prefetch_distance(R, K * BITS / 8), out);
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) y[m * N + n + r] = bias ? out[r][m] + bias[n + r] : out[r][m];
}


// One x row (MB = 1), 4-bit weights, group G known at compile time: rows [n0, n1) one after another as
// one sequential stream (the `single` case of gemv). Decode's hot loop: the generic tile kernel above
// recomputes chunk addresses, group-factor indices and block bounds with run-time divisions per chunk
// and is entered once per row; here the group-factor permute indices are constants, pointers advance,
// and only the rows' end work (hsum16, the bias half where it is not folded) remains per row. Each output
// is computed with exactly the operations, in exactly the order, of vnni_dot<4, SD, 1, 1, NP> +
// gemv_vnni_tile, so the result is bit-identical to it (and hence row m of a batched call equals this
// M = 1 result).
template <int SD, int NP, int G>
static void gemv_vnni_rows_q4_m1(const int8_t* planes, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                                 const float* bias, float* y, int64_t n0, int64_t n1) {
  constexpr int CW = 128, PB = NP * CW, LC = 8, CPB = 16 * G / CW;  // chunks per full 16-group block
  constexpr int GS = G == 32 ? 5 : G == 64 ? 6 : 7;
  constexpr int SB = SD == kF32 ? 4 : 2;  // bytes per stored scale
  const int64_t gpr = K / G, row_bytes = K / 2;
  const bool fold = vnni_fold_bias(gpr);
  const __m512i lanes = _mm512_setr_epi32(0, LC, 2 * LC, 3 * LC, 4 * LC, 5 * LC, 6 * LC, 7 * LC, 8 * LC, 9 * LC,
                                          10 * LC, 11 * LC, 12 * LC, 13 * LC, 14 * LC, 15 * LC);
  __m512i idx[CPB];  // lane -> group within the block, for chunk i of a block
  for (int i = 0; i < CPB; i++) idx[i] = _mm512_srli_epi32(_mm512_add_epi32(_mm512_set1_epi32(i * CW), lanes), GS);
  const __m512i nib = _mm512_set1_epi8(0x0f);
  const __m512i zero = _mm512_setzero_si512();
  const uint8_t* wr = w.data + n0 * row_bytes;
  TilePrefetch pref(wr, gemv_prefetch_distance(1, row_bytes));
  for (int64_t n = n0; n < n1; n++) {
    __m512 acc = _mm512_setzero_ps(), acc2 = _mm512_setzero_ps();
    const int8_t* p = planes;
    for (int64_t gb = 0; gb < gpr; gb += 16) {
      const int ng = int(std::min<int64_t>(16, gpr - gb));
      const __mmask16 gm = __mmask16((1u << ng) - 1u);
      __builtin_prefetch(w.scales + ((n + 1) * gpr + gb) * SB, 0, 3);
      __builtin_prefetch(w.biases + ((n + 1) * gpr + gb) * SB, 0, 3);
      const __m512 f = _mm512_mul_ps(load_scales16<SD>(w.scales, n * gpr + gb, gm), _mm512_maskz_loadu_ps(gm, sx + gb));
      if (fold) acc = _mm512_fmadd_ps(load_scales16<SD>(w.biases, n * gpr + gb, gm), _mm512_maskz_loadu_ps(gm, xsum + gb), acc);
      const int nch = ng * G / CW;
      for (int i = 0; i < nch; i++, wr += 64, p += PB) {
        pref.advance(64);  // see TilePrefetch
        const __m512i v = _mm512_loadu_si512(wr);
        const __m512i lo = _mm512_and_si512(v, nib);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
        __m512i a;
        if (NP == 3) {
          const __m512i a2 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, _mm512_loadu_si512(p)), hi, _mm512_loadu_si512(p + 64));
          const __m512i a1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, _mm512_loadu_si512(p + 128)), hi, _mm512_loadu_si512(p + 192));
          const __m512i a0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, _mm512_loadu_si512(p + 256)), hi, _mm512_loadu_si512(p + 320));
          a = _mm512_add_epi32(_mm512_slli_epi32(_mm512_add_epi32(_mm512_slli_epi32(a2, 8), a1), 8), a0);
        } else if (NP == 2) {
          const __m512i a1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, _mm512_loadu_si512(p)), hi, _mm512_loadu_si512(p + 64));
          const __m512i a0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, _mm512_loadu_si512(p + 128)), hi, _mm512_loadu_si512(p + 192));
          a = _mm512_add_epi32(_mm512_slli_epi32(a1, 8), a0);
        } else {
          a = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, lo, _mm512_loadu_si512(p)), hi, _mm512_loadu_si512(p + 64));
        }
        const __m512 fa = _mm512_cvtepi32_ps(a), fac = _mm512_permutexvar_ps(idx[i], f);
        if (i & 1) acc2 = _mm512_fmadd_ps(fa, fac, acc2);
        else acc = _mm512_fmadd_ps(fa, fac, acc);
      }
    }
    float v = hsum16(_mm512_add_ps(acc, acc2));
    if (!fold) v += scales_dot<SD>(w.biases, n * gpr, xsum, gpr);
    y[n] = bias ? v + bias[n] : v;
  }
}

#endif  // AVX-512 VNNI
