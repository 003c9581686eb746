// ---- Fast-activation GEMM for 4-/8-bit weights (included by kernels_impl.h inside the variant namespace) ----
// The less exact, faster prefill path (matmul_q8act; bindings pick it only in the "fast" or "int8"
// matmul precision): x is quantized per weight group to integers, x[m, c] ~= dx[m, g] * t[m, c] with
// dx = max_g |x| / T, and sum_c q[n, c] x[m, c] over a group becomes an integer dot product of codes and
// t, scaled once per group by s[n, g] * dx[m, g]. The bias half, sum_g b[n, g] * sum_{c in g} x[m, c],
// keeps the exact f32 group sums of x, so only the rounding of x separates it from the exact path.
//   planes = 1 ("int8"): T = 127, t is one int8 (as llama.cpp's Q8 activations, but per weight group):
//     error <= 1/254 of the group's largest |x| per element.
//   planes = 2 ("fast"): T = 32639 = 127 * 256 + 127, t = 256 * hi + lo as two int8 digit planes, two
//     dot products per step combined in i32: error <= 1/65278 of it, ~256x smaller for about half the
//     int8 rate.
//
// Layout: W rows are repacked a k-chunk at a time into an interleaved tile, VL rows x 4 codes per k-step
// ([k/4][VL rows][4 codes], one byte per code), so one vector holds 4 consecutive codes of VL rows and
// one u8 x s8 dot instruction (vpdpbusd; vpmaddubsw + vpmaddwd on AVX2; SDOT on Arm) against 4
// broadcast int8 x values advances VL outputs by 4 products each: the i32 lanes are the output rows, so
// no horizontal reduction is needed. A micro-kernel runs MR x rows over the tile per group, then applies
// the group's scales with one convert and two FMAs per x row.
#if (defined(__AVX512VNNI__) && MLX_VL == 16) || (defined(__AVX2__) && MLX_VL == 8) || \
    (defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4)

// Code widths this variant's dot product takes exactly: VNNI sums u8 x s8 in i32 (4- and 8-bit);
// vpmaddubsw sums pairs in s16 (2 * 15 * 127 fits, 2 * 255 * 127 does not); SDOT is s8 x s8 (codes
// must fit s8). Other widths, and 8-bit where not listed, keep the exact path.
static inline bool q8act_bits_ok(int bits) {
#if (defined(__AVX512VNNI__) && MLX_VL == 16) || defined(__AVXVNNI__)
  return bits == 4 || bits == 8;
#else
  return bits == 4;
#endif
}

#if defined(__AVX512VNNI__) && MLX_VL == 16
typedef __m512i q8w;
static inline q8w q8_load(const uint32_t* p) { return _mm512_loadu_si512(p); }
// acc[r] += sum_{j < 4} w[r][j] * x4[j] (w: VL rows x 4 u8 codes; x4: 4 int8 values as one i32).
static inline vi q8_dot(vi acc, q8w w, int32_t x4) { return (vi)_mm512_dpbusd_epi32((__m512i)acc, w, _mm512_set1_epi32(x4)); }
#elif defined(__AVX2__) && MLX_VL == 8
typedef __m256i q8w;
static inline q8w q8_load(const uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
static inline vi q8_dot(vi acc, q8w w, int32_t x4) {
#if defined(__AVXVNNI__)
  return (vi)_mm256_dpbusd_avx_epi32((__m256i)acc, w, _mm256_set1_epi32(x4));
#else
  const __m256i pairs = _mm256_maddubs_epi16(w, _mm256_set1_epi32(x4));  // s16, no saturation for 4-bit codes
  return (vi)_mm256_add_epi32((__m256i)acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
#endif
}
#else  // Arm SDOT
typedef int8x16_t q8w;
static inline q8w q8_load(const uint32_t* p) { return vreinterpretq_s8_u32(vld1q_u32(p)); }
static inline vi q8_dot(vi acc, q8w w, int32_t x4) {
  return (vi)vdotq_s32((int32x4_t)acc, w, vreinterpretq_s8_s32(vdupq_n_s32(x4)));
}
#endif

// The f32 product rounded to the nearest integer, ties to even, by the convert instruction (never an
// add that could be contracted into an FMA with the product: the rounding stays reproducible).
static inline vi q8_round(vf p) {
#if defined(__AVX512F__) && MLX_VL == 16
  return (vi)_mm512_cvtps_epi32((__m512)p);
#elif defined(__AVX2__) && MLX_VL == 8
  return (vi)_mm256_cvtps_epi32((__m256)p);
#else
  return (vi)vcvtnq_s32_f32((float32x4_t)p);
#endif
}

constexpr int kQ8MR = VL == 8 ? 4 : 8;  // x rows per one-vector micro-kernel (16 ymm on AVX2, 32 zmm / q regs otherwise)
constexpr int64_t kQ8KC = 512;         // k per chunk (a multiple of every group size)
constexpr int64_t kQ8MB = 512;         // x rows per task at most (the accumulator scratch; AMX: its row blocks)
// x rows per block as the VNNI driver splits M: blocks of about this many rows, m-block outermost, so the
// threads run every W tile over one block of x before the next, and that block's chunks come from L2.
// With one 512-row block each tile streamed all of x from L3 (12.6 MB of digit planes at K = 12288).
// Bit-identical; `kernels-ab --tiles`: 1.02-1.12x at M = 512, 1.24-1.45x at M = 2048 (docs/benchmarks.md,
// "Zen 5 VM (2026-12-07 evening)"); 128-row blocks lost ~5 % to the repeated tile repack.
constexpr int64_t kQ8MBTarget = 256;
// One VL-row sub-tile of a packed k-chunk: its codes (u32 words) and its group scales / biases (floats).
constexpr int64_t kQ8WStride = kQ8KC / 4 * VL, kQ8SStride = kQ8KC / 32 * VL;

// Quantizes rows [r0, r1) of x [M, K] per group of G: dx = max|x| / 127, xq = round(x / dx); xsum = the
// exact f32 group sums. Returns false when a row holds a non-finite value (the exact path then
// propagates it).
// Planes: xq[r * K + c] (int8), or hi at xq and lo at xq + M * K (two planes).
// AVX-512 VNNI repacks 4-bit W by 16x16 transposes of 32-bit words (q8act_pack_tile): a word holds 8
// codes, whose low nibbles (codes 0, 2, 4, 6) and high nibbles (1, 3, 5, 7) become consecutive k-steps.
// x is then stored in the same order within each 8 elements, so each broadcast 4-byte x group meets its
// codes. The integer group sums, and so every result, are the same in either order.
#if defined(__AVX512VNNI__) && MLX_VL == 16
constexpr bool kQ8EvenOdd = true;
#else
constexpr bool kQ8EvenOdd = false;
#endif

// Whether x goes in the even/odd order for this weight (exactly when q8act_pack_tile transposes its
// 4-bit codes).
static inline bool q8act_x_even_odd(const WeightRef& w) { return kQ8EvenOdd && w.bits == 4 && w.cols % 128 == 0; }

// Byte offset of x element (row r, column c) of one plane in the AMX tile order (gemm_amx.h):
// [16-row block][k-tile of ks columns][16 rows][ks bytes], K the row length.
static inline int64_t amx_x_offset(int64_t r, int64_t c, int64_t K, int ks) {
  return ((r / 16) * (K / ks) + c / ks) * 16 * ks + (r % 16) * ks + c % ks;
}

// Stores VL integers |t| <= 127 as VL bytes at dst, evens before odds within each 8 when even_odd.
// On AVX-512 one vpmovdb and one vpshufb: GCC 12 built the generic form below element by element
// (vpextrd / vpinsrb / vinsertps), 8 % of a 2048 x 1536 fast GEMM at M = 512 in perf.
static inline void q8act_store_bytes(vi t, bool even_odd, int8_t* dst) {
#if defined(__AVX512F__) && MLX_VL == 16
  __m128i b = _mm512_cvtepi32_epi8((__m512i)t);
  if (even_odd) b = _mm_shuffle_epi8(b, _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), b);
#else
  typedef int8_t vs8 __attribute__((vector_size(VL)));
  const vs8 q = __builtin_convertvector(t, vs8);
  (void)even_odd;  // only the AVX-512 VNNI variant reorders (kQ8EvenOdd)
  std::memcpy(dst, &q, sizeof q);
#endif
}

// tile_ks > 0 (the AMX driver): each plane in that tile order instead of row-major.
static bool q8act_quantize(const float* x, int64_t r0, int64_t r1, int64_t M, int64_t K, int G, int planes, int8_t* xq,
                           float* dx, float* xsum, bool even_odd = false, int tile_ks = 0) {
  const float T = planes == 2 ? 32639.f : 127.f;  // the largest |t| both planes can hold
  const int64_t gpr = K / G;
  for (int64_t r = r0; r < r1; r++)
    for (int64_t g = 0; g < gpr; g++) {
      const float* xg = x + r * K + g * G;
      vf mx = vsplat(0.f), s = vsplat(0.f);
      vu bad = {};
      for (int c = 0; c < G; c += VL) {
        const vf v = vload(xg + c);
        const vu bits = as_u(v);
        bad |= (vu)((bits & 0x7f800000u) == 0x7f800000u);  // inf or NaN
        mx = vmax(mx, as_f(bits & 0x7fffffffu));
        s += v;
      }
      for (int i = 0; i < VL; i++)
        if (bad[i]) return false;
      const float m = hmax(mx);
      dx[r * gpr + g] = m / T;
      xsum[r * gpr + g] = hsum(s);
      const float inv = m > 0.f ? T / m : 0.f;
      for (int c = 0; c < G; c += VL) {
        const vi t = q8_round(vload(xg + c) * inv);  // |t| <= T
        // Within each 8 elements: evens first, then odds (kQ8EvenOdd; VL is a multiple of 8 there).
        // VL elements never straddle a tile (tile widths are multiples of 32).
        const int64_t at = tile_ks ? amx_x_offset(r, g * G + c, K, tile_ks) : r * K + g * G + c;
        if (planes == 1) {
          q8act_store_bytes(t, even_odd, xq + at);
        } else {
          const vi lo = ((t + 128) & 255) - 128, hi = (t - lo) >> 8;  // t = 256 * hi + lo, both in [-128, 127]
          q8act_store_bytes(hi, even_odd, xq + at);
          q8act_store_bytes(lo, even_odd, xq + M * K + at);
        }
      }
    }
  return true;
}

// W rows [n0, n0 + nr) (nr <= VL; missing rows zero), elements [k0, k0 + kc), into the interleaved tile
// wt[(k / 4) * VL + r] (4 codes of row r as one u32), and the chunk's group scales and biases as
// sc[g * VL + r], bi[g * VL + r].
// The chunk's group scales and biases of W rows [n0, n0 + nr) as sc[g * VL + r], bi[g * VL + r]
// (missing rows zero).
static void q8act_pack_scales(const WeightRef& w, int64_t n0, int nr, int64_t k0, int64_t kc, float* sc, float* bi) {
  const int64_t G = w.group, gpr = w.cols / G;
  const bool tiled = w.layout == kWeightTiles16;  // then n0 % 16 == 0 and nr == 16 (rows % 16 == 0)
  for (int r = 0; r < VL; r++)
    for (int64_t g = 0; g < kc / G; g++) {
      const int64_t at = tiled ? ((n0 / 16) * gpr + k0 / G + g) * 16 + r : (n0 + r) * gpr + k0 / G + g;
      sc[g * VL + r] = r < nr ? scale_at(w.scales, w.scale_dtype, at) : 0.f;
      bi[g * VL + r] = r < nr ? scale_at(w.biases, w.scale_dtype, at) : 0.f;
    }
}

#if defined(__AVX512VNNI__) && MLX_VL == 16
// The 16 x 16 transpose of 32-bit words: out[i] lane r = in[r] word i (two interleave stages within
// 128-bit lanes, then a 4 x 4 transpose of the lanes).
static inline void transpose16x16_epi32(const __m512i* in, __m512i* out) {
  __m512i a[16], b[16];
  for (int i = 0; i < 16; i += 2) {
    a[i] = _mm512_unpacklo_epi32(in[i], in[i + 1]);      // per lane l: r0[4l] r1[4l] r0[4l+1] r1[4l+1]
    a[i + 1] = _mm512_unpackhi_epi32(in[i], in[i + 1]);  //             r0[4l+2] r1[4l+2] r0[4l+3] r1[4l+3]
  }
  for (int q = 0; q < 4; q++) {  // rows 4q..4q+3: b[4q + e] lane l = their word 4l + e
    b[4 * q + 0] = _mm512_unpacklo_epi64(a[4 * q], a[4 * q + 2]);
    b[4 * q + 1] = _mm512_unpackhi_epi64(a[4 * q], a[4 * q + 2]);
    b[4 * q + 2] = _mm512_unpacklo_epi64(a[4 * q + 1], a[4 * q + 3]);
    b[4 * q + 3] = _mm512_unpackhi_epi64(a[4 * q + 1], a[4 * q + 3]);
  }
  for (int e = 0; e < 4; e++) {  // word 4l + e of every row: lane q of b[4q + e], lane l
    const __m512i c0 = _mm512_shuffle_i32x4(b[e], b[4 + e], 0x44), c1 = _mm512_shuffle_i32x4(b[e], b[4 + e], 0xEE);
    const __m512i c2 = _mm512_shuffle_i32x4(b[8 + e], b[12 + e], 0x44), c3 = _mm512_shuffle_i32x4(b[8 + e], b[12 + e], 0xEE);
    out[e] = _mm512_shuffle_i32x4(c0, c2, 0x88);
    out[4 + e] = _mm512_shuffle_i32x4(c0, c2, 0xDD);
    out[8 + e] = _mm512_shuffle_i32x4(c1, c3, 0x88);
    out[12 + e] = _mm512_shuffle_i32x4(c1, c3, 0xDD);
  }
}
#endif

static void q8act_pack_tile(const WeightRef& w, int64_t n0, int nr, int64_t k0, int64_t kc, uint32_t* wt, float* sc, float* bi) {
  const int64_t row_bytes = w.cols * w.bits / 8, steps = kc / 4;
#if defined(__AVX512VNNI__) && MLX_VL == 16
  // 64 bytes of every row at a time, transposed so that each 32-bit word (8 codes at 4 bits, low
  // nibbles then high ones as two k-steps; 4 codes at 8 bits) of the 16 rows forms one vector, instead of
  // spreading codes row by row with one store per code word (measured +10-16 % on the whole GEMM at
  // M = 128, about even at M = 512). Needs x in the even/odd order (kQ8EvenOdd) for 4-bit codes.
  if (q8act_x_even_odd(w) || (w.bits == 8 && kc % 64 == 0)) {
    const int64_t cpb = w.bits == 4 ? 128 : 64;  // codes per 64-byte block
    const __m512i nib = _mm512_set1_epi8(0x0f);
    for (int64_t j = 0; j < kc / cpb; j++) {
      __m512i rows[16], t[16];
      if (w.layout == kWeightTiles16) {
        // Already 16 rows per vector (kernels.h): word (k0 + j * cpb) / codes per word + i of the tile is t[i].
        const int64_t cw = 32 / w.bits;  // codes per word
        const uint32_t* src = reinterpret_cast<const uint32_t*>(w.data) + ((n0 / 16) * (w.cols / cw) + (k0 + j * cpb) / cw) * 16;
        for (int i = 0; i < 16; i++) t[i] = _mm512_loadu_si512(src + i * 16);
      } else {
        for (int r = 0; r < 16; r++) {
          if (r < nr) {
            const uint8_t* p = w.data + (n0 + r) * row_bytes + (k0 + j * cpb) * w.bits / 8;
            rows[r] = _mm512_loadu_si512(p);
            _mm_prefetch(reinterpret_cast<const char*>(p + 256), _MM_HINT_T0);
          } else rows[r] = _mm512_setzero_si512();
        }
        transpose16x16_epi32(rows, t);
      }
      if (w.bits == 4) {
        uint32_t* o = wt + j * 32 * VL;
        for (int i = 0; i < 16; i++) {
          _mm512_storeu_si512(o + (2 * i) * VL, _mm512_and_si512(t[i], nib));
          _mm512_storeu_si512(o + (2 * i + 1) * VL, _mm512_and_si512(_mm512_srli_epi16(t[i], 4), nib));
        }
      } else {
        uint32_t* o = wt + j * 16 * VL;
        for (int i = 0; i < 16; i++) _mm512_storeu_si512(o + i * VL, t[i]);
      }
    }
    q8act_pack_scales(w, n0, nr, k0, kc, sc, bi);
    return;
  }
#endif
  q8act_pack_scales(w, n0, nr, k0, kc, sc, bi);
  for (int r = 0; r < VL; r++) {
    if (r >= nr) {
      for (int64_t k4 = 0; k4 < steps; k4++) wt[k4 * VL + r] = 0;
      continue;
    }
    // Codes of elements [k0, k0 + kc) of the row from p0: in place in the row layout; for a tiled weight
    // (4-bit codes with cols % 128 != 0, which the transposing path above does not take) a copy of them.
    static thread_local TiledRowBuf s_row;
    const uint8_t* p0 = w.layout == kWeightTiles16 ? tiled_row_view(w, n0 + r, k0, kc, s_row).data
                                                   : w.data + (n0 + r) * row_bytes + k0 * w.bits / 8;
    int64_t k4 = 0;
    if (w.bits == 4) {
      // Two bytes hold 4 codes (low nibble first); spread them to one byte each: 0xDCBA -> 0x0D0C0B0A.
      const uint8_t* p = p0;
      for (; k4 + VL <= steps; k4 += VL) {
        vh h;
        std::memcpy(&h, p + 2 * k4, sizeof h);
        const vu u = __builtin_convertvector(h, vu);
        const vu s = (u & 0xfu) | ((u & 0xf0u) << 4) | ((u & 0xf00u) << 8) | ((u & 0xf000u) << 12);
        for (int t = 0; t < VL; t++) wt[(k4 + t) * VL + r] = s[t];
      }
      for (; k4 < steps; k4++) {
        const uint32_t u = uint32_t(p[2 * k4]) | uint32_t(p[2 * k4 + 1]) << 8;
        wt[k4 * VL + r] = (u & 0xfu) | ((u & 0xf0u) << 4) | ((u & 0xf00u) << 8) | ((u & 0xf000u) << 12);
      }
    } else {
      for (; k4 < steps; k4++) std::memcpy(&wt[k4 * VL + r], p0 + 4 * k4, 4);
    }
  }
}

// Output rows per W tile: NV vectors of VL rows. With more than kQ8WideM x rows AVX-512 VNNI takes two
// (32 rows), so each broadcast x value feeds two dot instructions and each W load MR of them: with one
// vector per tile the inner loop issued one load per dot instruction and ran at about half the dot
// rate (measured at M = 512, 4096x4096 q4: fast 452 -> 556, int8 795 -> 932 GFLOP/s). The x rows per
// micro-kernel then shrink so that MR x NV i32 and f32 accumulator sets and the NV W vectors fit the 32
// registers: 6 rows (12 + 12 + 2), with two planes too since they take one plane pass after the other
// (kQ8PlanePasses; with both planes in one pass, two i32 sets: 4 rows, 16 + 8 + 2). Up to kQ8WideM rows the one-vector tile stays: its 8 KiB W tile and the chunk of every x
// row still share L1 (the two-vector tile measured 12-16 % slower at M = 64).
#if defined(__AVX512VNNI__) && MLX_VL == 16
constexpr int kQ8MaxNV = 2;
constexpr int kQ8MR1Wide = 6, kQ8MR2Wide = 6;
// Two digit planes as two passes over each group's codes (q8act_micro): one i32 accumulator set per x
// row instead of two, so as many x rows per micro-kernel as with one plane, and no vpaddd per group.
constexpr bool kQ8PlanePasses = true;
#elif defined(__AVX2__) && MLX_VL == 8 && !defined(__AVXVNNI__)
// AVX2 (s16 sums, q8act_micro below): each broadcast x value feeds two maddubs, so the vector ALUs spend
// 2.5 instead of 3 instructions per maddubs (broadcast, maddubs, s16 add). Rows per micro-kernel as
// measured best in same-process A/B runs at M = 512 (Zen 3; bit-identical outputs): int8 3 rows
// (1.2x over the one-vector tile), fast 1 row (~1.05x; 2 rows spill the 16 ymm registers).
constexpr int kQ8MaxNV = 2;
constexpr int kQ8MR1Wide = 3, kQ8MR2Wide = 1;
constexpr bool kQ8PlanePasses = false;
#else
constexpr int kQ8MaxNV = 1;
constexpr int kQ8MR1Wide = 1, kQ8MR2Wide = 1;
constexpr bool kQ8PlanePasses = false;
#endif
constexpr int64_t kQ8WideM = 96;

// Where a micro-kernel call's f32 accumulators start and end. acc: TR floats per x row. zero (the first
// k-chunk): start from 0 instead of loading acc, so the driver no longer clears acc per tile. y (a tile
// of TR whole rows whose K is one chunk): store acc + bias straight into the output rows, ldy floats
// apart, instead of into acc for the driver to copy: 1.12-1.22x on a 1536 x 256 GEMM at M = 512, where
// the copy is a large share of a tile's work; with several chunks the direct store measured no faster
// than the copy (`kernels-ab --tiles`, both load orders), so those keep the copy. Either way every
// output is the same float: 0 + t = t, and y = acc + bias (+ 0 without one) as the copy computes it.
struct Q8AccIO {
  float* acc;
  bool zero;
  float* y;           // the output element of (x row 0 of the call, tile row 0), or nullptr
  int64_t ldy;
  const float* bias;  // the tile's TR bias values, or nullptr
};

// acc[m] (kQ8TR output rows each) += the chunk's contribution for MR x rows. xq[m]: the chunk's int8 x
// of row m (the hi plane when PLANES == 2, the lo plane plane_off bytes further); dx[m], xs[m]: its
// groups' scales and exact sums; ng groups of G in the chunk. Sub-tile v of the tile (rows v*VL..) is
// at wt + v * wstride (codes) and sc / bi + v * sstride (scales). Each output's terms come in the same
// order whatever NV and MR are (k ascending within a group in i32, groups ascending in f32), so a row's
// result does not depend on the tiling.
#if defined(__AVX2__) && MLX_VL == 8 && !defined(__AVXVNNI__)
// AVX2 without VNNI: q8_dot costs three vector ALU instructions (vpmaddubsw, vpmaddwd by ones to widen
// the s16 pair sums to i32, vpaddd), and the four vector pipes bound the loop (measured on Zen 3:
// vpmaddubsw + vpaddw alone run at 2 per cycle, as many as FMAs). The pair sums of 4-bit codes are small
// (|w0 x0 + w1 x1| <= 2 * 15 * 128 = 3840), so kQ8S16Steps of them add exactly in s16 (8 * 3840 =
// 30720 < 2^15) before one vpmaddwd widens them: about 2 instructions per dot instead of 3 (1.19-1.36x
// the GEMM rate). With two planes the widening multiplies the hi plane's sums by 256 (vpmaddwd by
// 256s), so the i32 accumulator is 256 * hi + lo at once. Every integer sum is exact in both forms, so
// the result is bit-identical to the generic q8act_micro's. The f32 accumulators stay in acc (one load
// and store per group) to leave the 16 ymm registers to the s16 and i32 sums.
constexpr int kQ8S16Steps = 8;
template <int MR, int PLANES, int NV>
static inline void q8act_micro(const uint32_t* wt, int64_t wstride, const int8_t* const* xq, int64_t plane_off, const float* const* dx,
                               const float* const* xs, const float* sc, const float* bi, int64_t sstride, int64_t ng, int G, const Q8AccIO& io) {
  constexpr int TR = NV * VL;
  float* acc = io.acc;
  if (io.zero)
    for (int i = 0; i < MR * TR; i++) acc[i] = 0.f;
  const __m256i ones = _mm256_set1_epi16(1), c256 = _mm256_set1_epi16(256);
  for (int64_t g = 0; g < ng; g++) {
    __m256i ia[MR][NV];
    for (int m = 0; m < MR; m++)
      for (int v = 0; v < NV; v++) ia[m][v] = _mm256_setzero_si256();
    const uint32_t* wg = wt + g * (G / 4) * VL;
    for (int k0 = 0; k0 < G / 4; k0 += kQ8S16Steps) {  // G / 4 is a multiple of 8 for G = 32, 64, 128
      __m256i h[MR][NV], l[MR][NV];
      for (int m = 0; m < MR; m++)
        for (int v = 0; v < NV; v++) h[m][v] = l[m][v] = _mm256_setzero_si256();
      for (int k4 = k0; k4 < k0 + kQ8S16Steps; k4++) {
        __m256i wv[NV];
        for (int v = 0; v < NV; v++) wv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + v * wstride + k4 * VL));
        for (int m = 0; m < MR; m++) {
          int32_t x4;
          std::memcpy(&x4, xq[m] + g * G + 4 * k4, 4);
          const __m256i xh = _mm256_set1_epi32(x4);
          for (int v = 0; v < NV; v++) {
            h[m][v] = _mm256_add_epi16(h[m][v], _mm256_maddubs_epi16(wv[v], xh));
            // Keeps each sum a register chain: without it GCC reassociates the unrolled adds into a tree
            // and spills the products to the stack first (a store per dot).
            __asm__("" : "+x"(h[m][v]));
          }
          if (PLANES == 2) {
            std::memcpy(&x4, xq[m] + plane_off + g * G + 4 * k4, 4);
            const __m256i xl = _mm256_set1_epi32(x4);
            for (int v = 0; v < NV; v++) {
              l[m][v] = _mm256_add_epi16(l[m][v], _mm256_maddubs_epi16(wv[v], xl));
              __asm__("" : "+x"(l[m][v]));
            }
          }
        }
      }
      for (int m = 0; m < MR; m++)
        for (int v = 0; v < NV; v++) {
          if (PLANES == 2)
            ia[m][v] = _mm256_add_epi32(ia[m][v], _mm256_add_epi32(_mm256_madd_epi16(h[m][v], c256), _mm256_madd_epi16(l[m][v], ones)));
          else ia[m][v] = _mm256_add_epi32(ia[m][v], _mm256_madd_epi16(h[m][v], ones));
        }
    }
    for (int v = 0; v < NV; v++) {
      const vf s = vload(sc + v * sstride + g * VL), b = vload(bi + v * sstride + g * VL);
      for (int m = 0; m < MR; m++)
        vstore(acc + m * TR + v * VL,
               vload(acc + m * TR + v * VL) + (__builtin_convertvector((vi)ia[m][v], vf) * (s * dx[m][g]) + b * xs[m][g]));
    }
  }
  if (io.y)
    for (int m = 0; m < MR; m++)
      for (int v = 0; v < NV; v++)
        vstore(io.y + m * io.ldy + v * VL, vload(acc + m * TR + v * VL) + (io.bias ? vload(io.bias + v * VL) : vsplat(0.f)));
}
#else
template <int MR, int PLANES, int NV>
static inline void q8act_micro(const uint32_t* wt, int64_t wstride, const int8_t* const* xq, int64_t plane_off, const float* const* dx,
                               const float* const* xs, const float* sc, const float* bi, int64_t sstride, int64_t ng, int G, const Q8AccIO& io) {
  constexpr int TR = NV * VL;
  float* acc = io.acc;
  vf a[MR][NV];
  for (int m = 0; m < MR; m++)
    for (int v = 0; v < NV; v++) a[m][v] = io.zero ? vf{} : vload(acc + m * TR + v * VL);
  for (int64_t g = 0; g < ng; g++) {
    vi ia[MR][NV], il[MR][NV];
    for (int m = 0; m < MR; m++)
      for (int v = 0; v < NV; v++) ia[m][v] = il[m][v] = vi{};
    const uint32_t* wg = wt + g * (G / 4) * VL;
    // One pass over the group's codes per digit plane (hi, then lo); see kQ8PlanePasses.
    auto pass = [&](int64_t off) {
      for (int k4 = 0; k4 < G / 4; k4++) {
        q8w wv[NV];
        for (int v = 0; v < NV; v++) wv[v] = q8_load(wg + v * wstride + k4 * VL);
        for (int m = 0; m < MR; m++) {
          int32_t x4;
          std::memcpy(&x4, xq[m] + off + g * G + 4 * k4, 4);
          for (int v = 0; v < NV; v++) ia[m][v] = q8_dot(ia[m][v], wv[v], x4);
        }
      }
    };
    if (PLANES == 1) {
      pass(0);
    } else if (kQ8PlanePasses) {
      // The hi plane's sums, times 256, then the lo plane's products added onto them by the dot
      // instruction itself: the same integer as (hi << 8) + lo below (every partial sum stays below
      // 2^31), with one accumulator set instead of two.
      pass(0);
      for (int m = 0; m < MR; m++)
        for (int v = 0; v < NV; v++) ia[m][v] = ia[m][v] << 8;
      pass(plane_off);
    } else {
      // Both planes in one walk over the codes (each W load feeds both), summed apart.
      for (int k4 = 0; k4 < G / 4; k4++) {
        q8w wv[NV];
        for (int v = 0; v < NV; v++) wv[v] = q8_load(wg + v * wstride + k4 * VL);
        for (int m = 0; m < MR; m++) {
          int32_t hi, lo;
          std::memcpy(&hi, xq[m] + g * G + 4 * k4, 4);
          std::memcpy(&lo, xq[m] + plane_off + g * G + 4 * k4, 4);
          for (int v = 0; v < NV; v++) {
            ia[m][v] = q8_dot(ia[m][v], wv[v], hi);
            il[m][v] = q8_dot(il[m][v], wv[v], lo);
          }
        }
      }
      // 256 * hi-plane sum + lo-plane sum: |sum| <= G * 255 * 32639 < 2^31 for G <= 128.
      for (int m = 0; m < MR; m++)
        for (int v = 0; v < NV; v++) ia[m][v] = (ia[m][v] << 8) + il[m][v];
    }
    for (int v = 0; v < NV; v++) {
      const vf s = vload(sc + v * sstride + g * VL), b = vload(bi + v * sstride + g * VL);
      for (int m = 0; m < MR; m++) a[m][v] += __builtin_convertvector(ia[m][v], vf) * (s * dx[m][g]) + b * xs[m][g];
    }
  }
  if (io.y) {
    for (int m = 0; m < MR; m++)
      for (int v = 0; v < NV; v++) vstore(io.y + m * io.ldy + v * VL, a[m][v] + (io.bias ? vload(io.bias + v * VL) : vsplat(0.f)));
    return;
  }
  for (int m = 0; m < MR; m++)
    for (int v = 0; v < NV; v++) vstore(acc + m * TR + v * VL, a[m][v]);
}
#endif

template <int MR, int PLANES, int NV>
static inline void q8act_rows(int mr, const uint32_t* wt, int64_t wstride, const int8_t* const* xq, int64_t plane_off, const float* const* dx,
                              const float* const* xs, const float* sc, const float* bi, int64_t sstride, int64_t ng, int G, const Q8AccIO& io) {
  if constexpr (MR > 1) {
    if (mr < MR) {
      q8act_rows<MR - 1, PLANES, NV>(mr, wt, wstride, xq, plane_off, dx, xs, sc, bi, sstride, ng, G, io);
      return;
    }
  }
  q8act_micro<MR, PLANES, NV>(wt, wstride, xq, plane_off, dx, xs, sc, bi, sstride, ng, G, io);
}

#if defined(__AVX512VNNI__) && MLX_VL == 16
// Whether the GEMV (M <= kGemvMaxM) takes integer activations for this weight: whole 64-byte code chunks
// of the row-layout kernel (4-bit: K % 128, 8-bit: K % 64); other shapes (a 2048 x 64 LAuReL projection)
// keep the exact GEMV in every precision, tiled or not.
static inline bool q8act_gemv_takes(const WeightRef& w) {
  return (w.bits == 4 && w.cols % 128 == 0) || (w.bits == 8 && w.cols % 64 == 0);
}
#endif

struct Q8ActScratch {
  Scratch xq, dx, xsum, wt, sc, bi, acc, tiles;
};

#include "gemm_amx.h"

// y[M, N] = x[M, K] . W^T (+ bias) with integer activations of `planes` int8 digit planes (1 or 2).
// M <= kGemvMaxM (decode, batched decode) goes to the GEMV, which takes the same integer activations on
// the AVX-512 VNNI variant (vnni_prepare with 1 or 2 planes, for 4-bit weights with K % 128 == 0 and
// 8-bit with K % 64 == 0); elsewhere the GEMV stays exact. Returns false (y untouched) where this path
// does not apply: not an MLX affine weight of a code width the dot product takes, a group other than
// 32/64/128, a GEMV-sized M outside the case above, or a non-finite x (GEMM; the GEMV takes the exact
// path for that row only).
static bool matmul_q8act(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int planes) {
  if (w.dtype != kQAffine || (planes != 1 && planes != 2)) return false;
  if (M <= kGemvMaxM) {
#if defined(__AVX512VNNI__) && MLX_VL == 16
    // The GEMV's digit-plane path takes the same integer activations (vnni_prepare with `planes`), row by
    // row, so batched decode equals single-stream decode in these precisions too. (This GEMM with the
    // transposing repack measured 3x slower than it at M = 1: the repack reads 16 rows side by side.)
    if (q8act_gemv_takes(w)) {
      gemv(x, M, w, bias, y, planes);
      return true;
    }
#elif defined(__AVX2__) && MLX_VL == 8 && !defined(__AVXVNNI__)
    // The AVX2 q4 GEMV's s16 activations (avx2_q4_row_s16): 16-bit ("fast") or 8-bit ("int8") values
    // of the same definition as this GEMM's, row by row, so batched decode equals single-stream too.
    // (The avx2vnni variant keeps the exact GEMV: not measured on a CPU with AVX-VNNI yet.)
    if (w.bits == 4 && w.cols % kQ4Chunk == 0 && (w.group == 32 || w.group == 64 || w.group == 128)) {
      gemv(x, M, w, bias, y, planes);
      return true;
    }
#endif
    return false;
  }
  if (!q8act_bits_ok(w.bits)) return false;
  const int G = w.group;
  if (G != 32 && G != 64 && G != 128) return false;
  const int64_t K = w.cols, N = w.rows, gpr = K / G;
  static thread_local Q8ActScratch s_x;  // the calling thread's; workers only read it
#if defined(MLX_AMX)
  // AMX (gemm_amx.h): x in tile order, rows padded to whole 16-row tiles (pad rows zero, zero scales).
  const int64_t Mx = (M + 15) / 16 * 16;
  const int tile_ks = amx_ks(G);
#else
  const int64_t Mx = M;
  const int tile_ks = 0;
#endif
  int8_t* xq = s_x.xq.get<int8_t>(size_t(planes * Mx * K));
  float* dx = s_x.dx.get<float>(size_t(Mx * gpr));
  float* xsum = s_x.xsum.get<float>(size_t(Mx * gpr));
  if (Mx > M) {
    for (int p = 0; p < planes; p++) std::memset(xq + p * Mx * K + M * K, 0, size_t((Mx - M) * K));
    std::memset(dx + M * gpr, 0, size_t((Mx - M) * gpr) * sizeof(float));
    std::memset(xsum + M * gpr, 0, size_t((Mx - M) * gpr) * sizeof(float));
  }
  std::atomic<bool> finite{true};
  parallel_for(M, 8, [&](int64_t r0, int64_t r1) {
    if (!q8act_quantize(x, r0, r1, Mx, K, G, planes, xq, dx, xsum, q8act_x_even_odd(w), tile_ks)) finite = false;
  });
  if (!finite) return false;
#if defined(MLX_AMX)
  q8act_gemm_amx(xq, dx, xsum, M, Mx, w, bias, y, planes);
#else
  // mbk blocks of mb rows: M / kQ8MBTarget rounded to the nearest (so 300 rows stay one block: two
  // blocks of 150 measured 1-3 % slower), at least one; mb <= 383 <= kQ8MB.
  const int64_t mbk = std::max<int64_t>(1, (M + kQ8MBTarget / 2) / kQ8MBTarget), mb = (M + mbk - 1) / mbk;
  constexpr int64_t wstride = kQ8WStride, sstride = kQ8SStride;
  auto run = [&](auto nvc) {
    constexpr int NV = decltype(nvc)::value, TR = NV * VL;
    // x rows per micro-kernel: two i32 accumulator sets per row with two planes, so fewer rows.
    constexpr int MR1 = NV == 2 ? kQ8MR1Wide : kQ8MR, MR2 = NV == 2 ? kQ8MR2Wide : kQ8PlanePasses ? kQ8MR : kQ8MR / 2;
    const int64_t tiles = (N + TR - 1) / TR;
    parallel_for(tiles * mbk, 1, [&](int64_t t0, int64_t t1) {
      static thread_local Q8ActScratch s;
      uint32_t* wt = s.wt.get<uint32_t>(size_t(wstride * NV));
      float* sc = s.sc.get<float>(size_t(sstride * NV));
      float* bi = s.bi.get<float>(size_t(sstride * NV));
      float* acc = s.acc.get<float>(size_t(kQ8MB * TR));
      for (int64_t t = t0; t < t1; t++) {
        const int64_t n0 = (t % tiles) * TR, m0 = (t / tiles) * mb, m1 = std::min<int64_t>(M, m0 + mb);
        const int nr = int(std::min<int64_t>(TR, N - n0));
        // A whole tile of one chunk writes y itself (Q8AccIO); otherwise acc is copied below.
        const bool direct = K <= kQ8KC && nr == TR;
        for (int64_t k0 = 0; k0 < K; k0 += kQ8KC) {
          const int64_t kc = std::min<int64_t>(kQ8KC, K - k0), ng = kc / G;
          for (int v = 0; v < NV; v++)
            q8act_pack_tile(w, n0 + v * VL, std::max(0, std::min(VL, nr - v * VL)), k0, kc, wt + v * wstride, sc + v * sstride, bi + v * sstride);
          const int mstep = planes == 2 ? MR2 : MR1;
          for (int64_t m = m0; m < m1; m += mstep) {
            const int mr = int(std::min<int64_t>(mstep, m1 - m));
            constexpr int MRX = MR1 > MR2 ? MR1 : MR2;
            const int8_t* xr[MRX];
            const float* dr[MRX];
            const float* sr[MRX];
            for (int i = 0; i < mr; i++) {
              xr[i] = xq + (m + i) * K + k0;
              dr[i] = dx + (m + i) * gpr + k0 / G;
              sr[i] = xsum + (m + i) * gpr + k0 / G;
            }
            const Q8AccIO io{acc + (m - m0) * TR, k0 == 0, direct ? y + m * N + n0 : nullptr, N, bias ? bias + n0 : nullptr};
            if (planes == 2) q8act_rows<MR2, 2, NV>(mr, wt, wstride, xr, M * K, dr, sr, sc, bi, sstride, ng, G, io);
            else q8act_rows<MR1, 1, NV>(mr, wt, wstride, xr, 0, dr, sr, sc, bi, sstride, ng, G, io);
          }
        }
        if (!direct)
          for (int64_t m = m0; m < m1; m++)
            for (int r = 0; r < nr; r++) y[m * N + n0 + r] = acc[(m - m0) * TR + r] + (bias ? bias[n0 + r] : 0.f);
      }
    });
  };
  if (kQ8MaxNV == 2 && M > kQ8WideM) run(std::integral_constant<int, kQ8MaxNV>());
  else run(std::integral_constant<int, 1>());
#endif
  return true;
}

#else
// No byte dot product in this variant: the fast path never applies (matmul stays exact).
static bool matmul_q8act(const float*, int64_t, const WeightRef&, const float*, float*, int) { return false; }
#endif
