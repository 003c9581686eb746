// Kernel bodies, written once with GCC/Clang vector extensions and compiled once per ISA variant.
// Each variant's .cc defines MLX_NS (its namespace) and MLX_VL (floats per vector register) before
// including this file, and is built with that ISA's flags, so the same source becomes AVX-512, AVX2,
// NEON or baseline code. Standard headers are included by the variant file *before* this one so that
// no std inline function is emitted with a wider ISA than the baseline (ODR safety).
//
// Numerics: activations and accumulations are f32; weights are converted inside the loops and never
// expanded in memory (the GEMM path dequantizes one small packed panel at a time into scratch).

#include "../kernels.h"
#include "../half.h"
#include "../threadpool.h"

namespace MLX_NS {

using namespace mlx;

constexpr int VL = MLX_VL;
typedef float vf __attribute__((vector_size(VL * 4)));
typedef int32_t vi __attribute__((vector_size(VL * 4)));
typedef uint32_t vu __attribute__((vector_size(VL * 4)));
typedef uint16_t vh __attribute__((vector_size(VL * 2)));
typedef uint8_t vb __attribute__((vector_size(VL)));

static inline vf vload(const float* p) { vf v; std::memcpy(&v, p, sizeof v); return v; }
static inline void vstore(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
static inline vf vsplat(float x) { vf v = {}; return v + x; }
static inline float hsum(vf v) {
  float s = 0.f;
  for (int i = 0; i < VL; i++) s += v[i];
  return s;
}
static inline float hmax(vf v) {
  float m = v[0];
  for (int i = 1; i < VL; i++) m = v[i] > m ? v[i] : m;
  return m;
}
static inline vf vmax(vf a, vf b) { return a > b ? a : b; }
static inline vf vmin(vf a, vf b) { return a < b ? a : b; }
// Clamp that keeps NaN (vmin/vmax above return their second operand for a NaN first one, so
// vmin(vmax(NaN, lo), hi) is lo). Every transcendental and clamp goes through this so that a NaN input
// stays NaN and the logits check downstream can see it (tanh(NaN) = -1 once hid NaN logits behind the
// final soft-cap).
static inline vf vclamp_nan(vf x, vf lo, vf hi) {
  x = x < lo ? lo : x;  // false for NaN: x is kept
  return x > hi ? hi : x;
}
static inline vf as_f(vu u) { vf f; std::memcpy(&f, &u, sizeof f); return f; }
static inline vu as_u(vf f) { vu u; std::memcpy(&u, &f, sizeof u); return u; }

// u8 -> f32 in two steps: GCC scalarizes a direct u8->float __builtin_convertvector, while
// u8->i32 (vpmovzxbd) then i32->f32 (vcvtdq2ps) stays vectorized.
static inline vf bytes_to_f(vb q) { return __builtin_convertvector(__builtin_convertvector(q, vi), vf); }

// Packed-code decoders for the GEMV hot loop. GCC turns generic u8-vector code into byte extraction
// through general registers, so the x86 variants (SSE2, the x86-64 baseline, in "scalar") and the NEON
// variants use intrinsics (MLX_USE_NEON is defined by the neon variant files only: on arm64 the
// "scalar" variant stays the plain generic code). Decoded codes are exact integers either way.
// decode_q4: VL bytes -> low nibbles (even elements) and high nibbles (odd elements) as f32.
static inline void decode_q4(const uint8_t* p, vf& lo, vf& hi) {
#if defined(__AVX512F__) && MLX_VL == 16
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(15);
  lo = (vf)_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(q, m)));
  hi = (vf)_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(q, 4), m)));
#elif defined(__AVX2__) && MLX_VL == 8
  const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(15);
  lo = (vf)_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_and_si128(q, m)));
  hi = (vf)_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(q, 4), m)));
#elif defined(MLX_USE_NEON) && MLX_VL == 4
  uint32_t word;
  std::memcpy(&word, p, 4);
  const uint8x8_t q = vreinterpret_u8_u32(vdup_n_u32(word));
  lo = (vf)vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vand_u8(q, vdup_n_u8(15))))));
  hi = (vf)vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vshr_n_u8(q, 4)))));
#elif defined(__SSE2__) && MLX_VL == 4
  uint32_t word;
  std::memcpy(&word, p, 4);
  const __m128i q = _mm_cvtsi32_si128(int(word)), z = _mm_setzero_si128(), m = _mm_set1_epi8(15);
  const __m128i l8 = _mm_and_si128(q, m), h8 = _mm_and_si128(_mm_srli_epi16(q, 4), m);
  lo = (vf)_mm_cvtepi32_ps(_mm_unpacklo_epi16(_mm_unpacklo_epi8(l8, z), z));
  hi = (vf)_mm_cvtepi32_ps(_mm_unpacklo_epi16(_mm_unpacklo_epi8(h8, z), z));
#else
  vb q;
  std::memcpy(&q, p, sizeof q);
  lo = bytes_to_f((vb)(q & 15));
  hi = bytes_to_f((vb)(q >> 4));
#endif
}
// decode_q8: VL bytes -> VL f32.
static inline vf decode_q8(const uint8_t* p) {
#if defined(__AVX512F__) && MLX_VL == 16
  return (vf)_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#elif defined(__AVX2__) && MLX_VL == 8
  return (vf)_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#elif defined(MLX_USE_NEON) && MLX_VL == 4
  uint32_t word;
  std::memcpy(&word, p, 4);
  return (vf)vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(word))))));
#elif defined(__SSE2__) && MLX_VL == 4
  uint32_t word;
  std::memcpy(&word, p, 4);
  const __m128i z = _mm_setzero_si128();
  return (vf)_mm_cvtepi32_ps(_mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(int(word)), z), z));
#else
  vb q;
  std::memcpy(&q, p, sizeof q);
  return bytes_to_f(q);
#endif
}

static inline vf load_bf16(const uint8_t* p) {
  vh h; std::memcpy(&h, p, sizeof h);
  vu u = __builtin_convertvector(h, vu) << 16;
  return as_f(u);
}
static inline vf load_f16(const uint8_t* p) {
#if defined(__AVX512F__) && MLX_VL == 16
  return (vf)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif defined(__F16C__) && MLX_VL == 8
  return (vf)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#endif
  vh h16; std::memcpy(&h16, p, sizeof h16);
  vu h = __builtin_convertvector(h16, vu);
  vf f = as_f((h & 0x7fffu) << 13) * 0x1p112f;
  vu u = as_u(f);
  vu is_inf = (vu)((h & 0x7c00u) == 0x7c00u);
  u |= is_inf & 0x7f800000u;
  u |= (h & 0x8000u) << 16;
  return as_f(u);
}
// Loads VL consecutive elements of a row stored in dtype (f32/f16/bf16) as f32.
static inline vf load_any(const uint8_t* base, int dtype, int64_t i) {
  if (dtype == kF32) return vload(reinterpret_cast<const float*>(base) + i);
  if (dtype == kBF16) return load_bf16(base + 2 * i);
  return load_f16(base + 2 * i);
}

// exp for f32 vectors: range reduction to [-ln2/2, ln2/2] and a degree-6 polynomial (~2 ulp).
static inline vf vexp(vf x) {
  x = vclamp_nan(x, vsplat(-87.33654f), vsplat(88.72283f));  // NaN stays NaN through the polynomial
  // Round to nearest with the 1.5*2^23 trick (exact for |n| < 2^22; no vector select needed).
  vf nf = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;
  vi ni = __builtin_convertvector(nf, vi);
  vf r = x - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  vf p = vsplat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n split in two factors so n = -127 at the bottom of the range never forms a bad exponent.
  vi e1 = ((ni >> 1) + 127) << 23;
  vi e2 = ((ni - (ni >> 1)) + 127) << 23;
  vf scale, scale2;
  std::memcpy(&scale, &e1, sizeof scale);
  std::memcpy(&scale2, &e2, sizeof scale2);
  return p * scale * scale2;
}
static inline vf vtanh(vf x) {
  // tanh(x) = 1 - 2 / (exp(2x) + 1); accurate to ~1e-7 absolute, saturates correctly.
  vf e = vexp(x * 2.0f);
  return 1.0f - 2.0f / (e + 1.0f);
}

// ---------------------------------------------------------------------------------------------
// Matmul. y[M,N] = x[M,K] . W^T. Small M (decode) streams W once through a GEMV that dequantizes in
// registers; large M (prefill) transposes x into tiles and streams W rows, decoded a block at a time,
// through a register-blocked micro-kernel (gemm_xt.h).

constexpr int kGemvMaxM = 4;

static inline float scale_at(const uint8_t* p, int dtype, int64_t i) { return load_scalar(p, dtype, i); }

// Extracts the b-bit code c of a row stored as a little-endian LSB-first bit stream (any b).
static inline uint32_t code_at(const uint8_t* row, int bits, int64_t c) {
  int64_t t = c * bits;
  int64_t byte = t >> 3;
  int sh = int(t & 7);
  uint32_t w = row[byte];
  if (sh + bits > 8) w |= uint32_t(row[byte + 1]) << 8;
  if (sh + bits > 16) w |= uint32_t(row[byte + 2]) << 16;
  return (w >> sh) & ((1u << bits) - 1u);
}

// Dequantizes elements [c0, c0 + n) of row r into out (natural order). n is a whole number of groups.
static void dequant_row_range(const WeightRef& w, int64_t r, int64_t c0, int64_t n, float* out) {
  const int64_t K = w.cols;
  const int64_t row_bytes = K * w.bits / 8;
  const uint8_t* row = w.data + r * row_bytes;
  const int64_t gpr = K / w.group;
  for (int64_t c = c0; c < c0 + n;) {
    const int64_t g = c / w.group;
    const float s = scale_at(w.scales, w.scale_dtype, r * gpr + g);
    const float b = scale_at(w.biases, w.scale_dtype, r * gpr + g);
    const int64_t end = (g + 1) * w.group;
    if (w.bits == 4) {
      for (; c < end; c++) out[c - c0] = float((row[c >> 1] >> ((c & 1) * 4)) & 15u) * s + b;
    } else if (w.bits == 8) {
      for (; c < end; c++) out[c - c0] = float(row[c]) * s + b;
    } else {
      for (; c < end; c++) out[c - c0] = float(code_at(row, w.bits, c)) * s + b;
    }
  }
}

// Converts elements [c0, c0+n) of row r of a float weight into out.
static void float_row_range(const WeightRef& w, int64_t r, int64_t c0, int64_t n, float* out) {
  const int64_t K = w.cols;
  if (w.dtype == kF32) {
    std::memcpy(out, reinterpret_cast<const float*>(w.data) + r * K + c0, size_t(n) * 4);
    return;
  }
  const uint8_t* row = w.data + (r * K + c0) * 2;
  int64_t i = 0;
  for (; i + VL <= n; i += VL) vstore(out + i, w.dtype == kBF16 ? load_bf16(row + 2 * i) : load_f16(row + 2 * i));
  for (; i < n; i++) out[i] = load_scalar(row, w.dtype, i);
}

static void weight_row_range(const WeightRef& w, int64_t r, int64_t c0, int64_t n, float* out) {
  if (w.dtype == kQAffine) dequant_row_range(w, r, c0, n, out);
  else float_row_range(w, r, c0, n, out);
}

// Whether rows of W decode to the pair-permuted order (4-bit codes through decode_q4: per 2 * VL codes,
// the even elements, then the odd ones). The matching x must then be permuted the same way.
static inline bool decodes_pair_permuted(const WeightRef& w) {
  return w.dtype == kQAffine && w.bits == 4 && w.group % (2 * VL) == 0;
}

// Elements [c0, c0 + n) of row r of W as f32 into out, in natural order or, where
// decodes_pair_permuted(w), pair-permuted. c0 and n are whole groups for quantized weights. 4- and
// 8-bit codes use the vector decoders; other widths the scalar one. Used by both prefill GEMMs.
static void decode_row_block(const WeightRef& w, int64_t r, int64_t c0, int64_t n, float* out) {
  if (w.dtype != kQAffine) { float_row_range(w, r, c0, n, out); return; }
  const int G = w.group;
  const int64_t gpr = w.cols / G;
  const uint8_t* row = w.data + r * (w.cols * w.bits / 8);
  if ((w.bits != 4 && w.bits != 8) || G % (2 * VL) != 0) { dequant_row_range(w, r, c0, n, out); return; }
  for (int64_t c = c0; c < c0 + n; c += G) {
    const int64_t g = c / G;
    const vf s = vsplat(scale_at(w.scales, w.scale_dtype, r * gpr + g));
    const vf b = vsplat(scale_at(w.biases, w.scale_dtype, r * gpr + g));
    float* o = out + (c - c0);
    if (w.bits == 4) {
      for (int j = 0; j < G; j += 2 * VL) {
        vf lo, hi;
        decode_q4(row + (c + j) / 2, lo, hi);
        vstore(o + j, lo * s + b);
        vstore(o + j + VL, hi * s + b);
      }
    } else {
      for (int j = 0; j < G; j += VL) vstore(o + j, decode_q8(row + c + j) * s + b);
    }
  }
}

// Per-thread growable scratch. A plain struct of this variant's namespace rather than a std container:
// a std template instantiated here would be compiled with this variant's ISA flags, and the linker may
// keep that copy for every variant (an AVX-512 instruction in the scalar variant's path).
struct Scratch {
  uint8_t* p = nullptr;
  size_t cap = 0;
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { delete[] p; }
  // A 64-byte aligned buffer of at least n elements of T (contents unspecified).
  template <typename T>
  T* get(size_t n) {
    const size_t bytes = n * sizeof(T) + 64;
    if (bytes > cap) {
      delete[] p;
      p = new uint8_t[bytes];
      cap = bytes;
    }
    return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t(63));
  }
};

// Runs tile<R>(n) over rows [n0, n1) in steps of R, then tile<1> for the remainder; with `single`,
// tile<1> for every row.
template <int R, typename TR, typename T1>
static inline void row_tiles(int64_t n0, int64_t n1, const TR& tile_r, const T1& tile_1, bool single = false) {
  int64_t n = n0;
  if (!single)
    for (; n + R <= n1; n += R) tile_r(n);
  for (; n < n1; n++) tile_1(n);
}

// Software prefetch for GEMV tiles. Rows are consecutive, so the next tile (R rows) is the contiguous
// region after this one; while a tile is computed, its share of that region is prefetched in address
// order, one cache line per 64 bytes the tile consumes. DRAM then sees one sequential stream per thread
// even though a tile reads R rows side by side. Short rows give the hardware prefetchers too little to
// train on, and the quantized inner loops are light enough that waiting on DRAM would show.
// The distance is one tile, and at least 4 KB.
static inline int64_t gemv_prefetch_distance(int R, int64_t row_bytes) {
  return std::max<int64_t>(int64_t(R) * row_bytes, 4096);
}
struct TilePrefetch {
  const uint8_t* base;  // first byte to prefetch (tile start + distance)
  int64_t issued = 0, consumed = 0;
  TilePrefetch(const uint8_t* tile, int64_t distance) : base(tile + distance) {}
  // The tile consumed `bytes` more bytes: prefetch as many ahead.
  inline void advance(int64_t bytes) {
    consumed += bytes;
    for (; issued < consumed; issued += 64) __builtin_prefetch(base + issued, 0, 3);
  }
};

// Rows of W per GEMV tile: every x load feeds R weight rows, and R x MB accumulator sets stay in
// registers (32 vector registers with AVX-512, 16 otherwise). Used when x is too large to stay in L1 for
// a whole row; otherwise the GEMV walks one row at a time (gemv_block's `single`), which reads W as
// one sequential stream per thread: DRAM serves that faster than R interleaved streams.
template <int MB>
struct GemvRows {
  static constexpr int R = MB == 1 ? 4 : VL >= 16 ? (MB == 2 ? 4 : 2) : (MB == 2 ? 2 : 1);
};

// x reordered for the pair-packed layouts: each block of 2*VL elements becomes [evens..., odds...], so
// the low/high nibbles of VL packed 4-bit bytes, or the low/high halves of VL u32 words of bf16 pairs,
// meet their x values in one aligned vector each. A tail shorter than 2*VL is copied unchanged.
static void permute_pairs(const float* x, int64_t K, float* xp) {
  int64_t blk = 0;
  for (; blk + 2 * VL <= K; blk += 2 * VL)
    for (int j = 0; j < VL; j++) {
      xp[blk + j] = x[blk + 2 * j];
      xp[blk + VL + j] = x[blk + 2 * j + 1];
    }
  for (; blk < K; blk++) xp[blk] = x[blk];
}

// 2*VL float weights of a row from element k. BF16 yields (even elements, odd elements) of the block
// with one shift and one mask (x must be permute_pairs'd); F32/F16 yield the two halves in order.
template <int DT, bool PAIRS = true>
static inline void wload2(const uint8_t* row, int64_t k, vf& w0, vf& w1) {
  if (DT == kBF16 && !PAIRS) {
    w0 = load_bf16(row + 2 * k);
    w1 = load_bf16(row + 2 * k + 2 * VL);
  } else if (DT == kF32) {
    w0 = vload(reinterpret_cast<const float*>(row) + k);
    w1 = vload(reinterpret_cast<const float*>(row) + k + VL);
  } else if (DT == kBF16) {
    vu u;
    std::memcpy(&u, row + 2 * k, sizeof u);
    w0 = as_f(u << 16);
    w1 = as_f(u & 0xffff0000u);
  } else {
    w0 = load_f16(row + 2 * k);
    w1 = load_f16(row + 2 * k + 2 * VL);
  }
}

// GEMV tile over float weights: rows [n, n + R) of W against MB rows of x. xs is x as the weight layout
// wants it (permute_pairs'd for BF16 when PAIRS); x is the original, used for the tail.
template <int DT, int MB, int R, bool PAIRS = true>
static void gemv_float_tile(const float* xs, const float* x, int64_t K, const WeightRef& w, const float* bias,
                            float* y, int64_t N, int64_t n) {
  constexpr int64_t esz = DT == kF32 ? 4 : 2;
  const uint8_t* rows[R];
  for (int r = 0; r < R; r++) rows[r] = w.data + (n + r) * K * esz;
  vf acc[R][MB][2];
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) acc[r][m][0] = acc[r][m][1] = vsplat(0.f);
  TilePrefetch pref(rows[0], gemv_prefetch_distance(R, K * esz));
  int64_t k = 0;
  for (; k + 2 * VL <= K; k += 2 * VL) {
    vf xa[MB], xb[MB];
    for (int m = 0; m < MB; m++) {
      xa[m] = vload(xs + m * K + k);
      xb[m] = vload(xs + m * K + k + VL);
    }
    pref.advance(R * 2 * VL * esz);
    for (int r = 0; r < R; r++) {
      vf w0, w1;
      wload2<DT, PAIRS>(rows[r], k, w0, w1);
      for (int m = 0; m < MB; m++) {
        acc[r][m][0] += w0 * xa[m];
        acc[r][m][1] += w1 * xb[m];
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) {
      float s = hsum(acc[r][m][0] + acc[r][m][1]);
      for (int64_t kk = k; kk < K; kk++) s += load_scalar(rows[r], DT, kk) * x[m * K + kk];
      y[m * N + n + r] = bias ? s + bias[n + r] : s;
    }
}

// Quantized GEMV. y_r = sum_g ( s[r,g] * sum_{c in g} q[r,c] x[c] ) + sum_g b[r,g] * xsum[g]: the hot
// loop accumulates q * x per group in vector lanes and applies the group's scale once; the bias half is
// one short dot product per row against the per-group sums of x (xsum), precomputed once per call.
template <int SD>
static inline float scale_t(const uint8_t* p, int64_t i) {
  if (SD == kF32) { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
  uint16_t h; std::memcpy(&h, p + 2 * i, 2);
  return SD == kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

// sum_{i < n} b[off + i] * xs[i] with b in dtype SD.
template <int SD>
static inline float scales_dot(const uint8_t* b, int64_t off, const float* xs, int64_t n) {
  vf a = vsplat(0.f);
  int64_t i = 0;
  for (; i + VL <= n; i += VL) a += load_any(b, SD, off + i) * vload(xs + i);
  float s = hsum(a);
  for (; i < n; i++) s += scale_t<SD>(b, off + i) * xs[i];
  return s;
}

// 4- and 8-bit tile: rows [n, n + R). For 4-bit, xs is permute_pairs'd (low nibbles = even elements).
// Requires group % (2 * VL) == 0.
template <int BITS, int SD, int MB, int R>
static void gemv_q_tile(const float* xs, const float* xsum, int64_t K, const WeightRef& w, const float* bias,
                        float* y, int64_t N, int64_t n) {
  const int64_t G = w.group, gpr = K / G, row_bytes = K * BITS / 8;
  const uint8_t* rows[R];
  for (int r = 0; r < R; r++) rows[r] = w.data + (n + r) * row_bytes;
  TilePrefetch pref(rows[0], gemv_prefetch_distance(R, row_bytes));
  vf acc[R][MB];
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) acc[r][m] = vsplat(0.f);
  for (int64_t g = 0; g < gpr; g++) {
    vf qa[R][MB];
    for (int r = 0; r < R; r++)
      for (int m = 0; m < MB; m++) qa[r][m] = vsplat(0.f);
    for (int64_t c = g * G; c < (g + 1) * G; c += 2 * VL) {
      vf xa[MB], xb[MB];
      for (int m = 0; m < MB; m++) {
        xa[m] = vload(xs + m * K + c);
        xb[m] = vload(xs + m * K + c + VL);
      }
      pref.advance(R * 2 * VL * BITS / 8);
      for (int r = 0; r < R; r++) {
        vf lo, hi;
        if (BITS == 4) {
          decode_q4(rows[r] + (c >> 1), lo, hi);
        } else {
          lo = decode_q8(rows[r] + c);
          hi = decode_q8(rows[r] + c + VL);
        }
        for (int m = 0; m < MB; m++) {
          qa[r][m] += lo * xa[m];
          qa[r][m] += hi * xb[m];
        }
      }
    }
    for (int r = 0; r < R; r++) {
      const float s = scale_t<SD>(w.scales, (n + r) * gpr + g);
      for (int m = 0; m < MB; m++) acc[r][m] += qa[r][m] * s;
    }
  }
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) {
      const float v = hsum(acc[r][m]) + scales_dot<SD>(w.biases, (n + r) * gpr, xsum + m * gpr, gpr);
      y[m * N + n + r] = bias ? v + bias[n + r] : v;
    }
}

// Any bit width / group: dequantizes one group of one row at a time into registers' worth of scratch.
template <int MB>
static void gemv_q_generic_row(const float* x, int64_t K, const WeightRef& w, const float* bias, float* y,
                               int64_t N, int64_t n) {
  float tmp[128];
  vf acc[MB];
  float tail[MB];
  for (int m = 0; m < MB; m++) { acc[m] = vsplat(0.f); tail[m] = 0.f; }
  const int64_t G = w.group;
  for (int64_t c0 = 0; c0 < K; c0 += G) {
    dequant_row_range(w, n, c0, G, tmp);
    int64_t c = 0;
    for (; c + VL <= G; c += VL) {
      const vf wv = vload(tmp + c);
      for (int m = 0; m < MB; m++) acc[m] += wv * vload(x + m * K + c0 + c);
    }
    for (; c < G; c++)
      for (int m = 0; m < MB; m++) tail[m] += tmp[c] * x[m * K + c0 + c];
  }
  for (int m = 0; m < MB; m++) {
    const float v = hsum(acc[m]) + tail[m];
    y[m * N + n] = bias ? v + bias[n] : v;
  }
}

// Row-range GEMV entry points for other kernels (moe_impl.h): rows [n0, n1) of W against MB rows of x,
// y indexed by absolute row. gemv_float_rows takes x as is. gemv_q_rows takes x permute_for_q4'd when
// bits == 4 and group % (2 * VL) == 0 (x as is otherwise) and the per-group sums of x.
static inline void permute_for_q4(const float* x, int64_t K, float* xp) { permute_pairs(x, K, xp); }

template <int MB>
static void gemv_float_rows(const float* x, int64_t K, const WeightRef& w, const float* bias, float* y, int64_t N,
                            int64_t n0, int64_t n1) {
  constexpr int R = GemvRows<MB>::R;
  auto run = [&](auto dt) {
    constexpr int DT = decltype(dt)::value;
    row_tiles<R>(n0, n1, [&](int64_t n) { gemv_float_tile<DT, MB, R, false>(x, x, K, w, bias, y, N, n); },
                 [&](int64_t n) { gemv_float_tile<DT, MB, 1, false>(x, x, K, w, bias, y, N, n); });
  };
  if (w.dtype == kBF16) run(std::integral_constant<int, kBF16>());
  else if (w.dtype == kF16) run(std::integral_constant<int, kF16>());
  else run(std::integral_constant<int, kF32>());
}

template <int MB, int SD>
static void gemv_q_rows(const float* xp, const float* xsum, int64_t K, const WeightRef& w, const float* bias, float* y,
                        int64_t N, int64_t n0, int64_t n1) {
  constexpr int R = GemvRows<MB>::R;
  const bool fast = (w.bits == 4 || w.bits == 8) && w.group % (2 * VL) == 0;
  if (fast && w.bits == 4)
    row_tiles<R>(n0, n1, [&](int64_t n) { gemv_q_tile<4, SD, MB, R>(xp, xsum, K, w, bias, y, N, n); },
                 [&](int64_t n) { gemv_q_tile<4, SD, MB, 1>(xp, xsum, K, w, bias, y, N, n); });
  else if (fast)
    row_tiles<R>(n0, n1, [&](int64_t n) { gemv_q_tile<8, SD, MB, R>(xp, xsum, K, w, bias, y, N, n); },
                 [&](int64_t n) { gemv_q_tile<8, SD, MB, 1>(xp, xsum, K, w, bias, y, N, n); });
  else
    for (int64_t n = n0; n < n1; n++) gemv_q_generic_row<MB>(xp, K, w, bias, y, N, n);
}

// ---- Integer-dot GEMV for 4-/8-bit weights: AVX-512 VNNI (4- and 8-bit) and AVX2 (4-bit) ----
// Shared by both: the exact 3-piece split of x described below (kPlaneT, plane_digits). Each variant
// then has its own plane writer (the plane layout follows its vector width) and dot kernel.
#if (defined(__AVX512VNNI__) && MLX_VL == 16) || (defined(__AVX2__) && MLX_VL == 8) || \
    (defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4)
// Per quantization group g, x is written as three signed 8-bit digit planes:
//   x[c] ~= sx[g] * t[c],  t = d2*65536 + d1*256 + d0,  |t| <= 8355711,  sx[g] = max_g |x| / 8355711,
// so each x is represented to 23 bits relative to its group's largest element (error <= 2^-24 max_g|x|,
// one f32 rounding of that element): an f32-exact split of x, not an 8-bit activation quantization.
// sum q*x over a chunk of codes is then three u8 codes x s8 digits -> i32 dot products per code vector
// (vpdpbusd with VNNI; vpmaddubsw + vpmaddwd with AVX2), combined in i32 and converted to f32 once per
// chunk, replacing the per-code u8 -> f32 conversions that bound the f32 path. The result matches the
// f32 path to f32 rounding.
constexpr int kPlaneT = 8355711;  // 127 * 65536 + 127 * 256 + 127

// t (|t| <= kPlaneT, one per i32 lane) -> digits with t = d2 * 65536 + d1 * 256 + d0, each in [-128, 127].
static inline void plane_digits(vi t, vi& d2, vi& d1, vi& d0) {
  d0 = ((t + 128) & 255) - 128;
  const vi t1 = (t - d0) >> 8;
  d1 = ((t1 + 128) & 255) - 128;
  d2 = (t1 - d1) >> 8;
}
#endif  // integer-dot GEMV (shared part)

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
// Returns false when x holds a non-finite value (the caller then uses the f32 path, which propagates it).
static bool vnni_prepare(const float* x, int64_t K, int G, int bits, int8_t* planes, float* sx) {
  const int64_t gpr = K / G;
  const int CW = bits == 4 ? 128 : 64;
  const __m512 inf = _mm512_set1_ps(INFINITY);
  const __m512i tmax = _mm512_set1_epi32(kPlaneT), tmin = _mm512_set1_epi32(-kPlaneT);
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
    sx[g] = m / float(kPlaneT);
    const __m512 inv = _mm512_set1_ps(m > 0.f ? float(kPlaneT) / m : 0.f);
    for (int c = 0; c < G; c += 32) {
      const int64_t e = g * G + c;  // element index of this 32-element block
      __m512i ta = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + e), inv));
      __m512i tb = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + e + 16), inv));
      ta = _mm512_min_epi32(_mm512_max_epi32(ta, tmin), tmax);
      tb = _mm512_min_epi32(_mm512_max_epi32(tb, tmin), tmax);
      int8_t* base = planes + (e / CW) * 3 * CW;
      const int64_t cc = e % CW;
      __m512i d2, d1, d0;
      if (bits == 4) {
        const __m512i ev = _mm512_permutex2var_epi32(ta, even, tb);
        const __m512i od = _mm512_permutex2var_epi32(ta, odd, tb);
        const int64_t j = cc / 2;
        plane_digits(ev, d2, d1, d0);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 0 * 128 + j), _mm512_cvtepi32_epi8(d2));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 1 * 128 + j), _mm512_cvtepi32_epi8(d1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 2 * 128 + j), _mm512_cvtepi32_epi8(d0));
        plane_digits(od, d2, d1, d0);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 0 * 128 + 64 + j), _mm512_cvtepi32_epi8(d2));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 1 * 128 + 64 + j), _mm512_cvtepi32_epi8(d1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 2 * 128 + 64 + j), _mm512_cvtepi32_epi8(d0));
      } else {
        plane_digits(ta, d2, d1, d0);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 0 * 64 + cc), _mm512_cvtepi32_epi8(d2));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 1 * 64 + cc), _mm512_cvtepi32_epi8(d1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 2 * 64 + cc), _mm512_cvtepi32_epi8(d0));
        plane_digits(tb, d2, d1, d0);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 0 * 64 + cc + 16), _mm512_cvtepi32_epi8(d2));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 1 * 64 + cc + 16), _mm512_cvtepi32_epi8(d1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(base + 2 * 64 + cc + 16), _mm512_cvtepi32_epi8(d0));
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

// The scale half of the quantized dot product for rows [n, n + R) against MB prepared x rows, over
// groups [g0, g1) (g0 a multiple of 16), added to out[r][m]. Groups are taken 16 at a time: their
// scales times the x group scales form one f32 vector f, and each chunk's lanes pick their group's
// factor from f with one permute (a lane holds 8 (4-bit) or 4 (8-bit) consecutive codes, always of one
// group). pf: software prefetch distance in bytes. Even and odd chunks accumulate into acc and acc2
// (two FMA chains per row and x row), summed at the end.
template <int BITS, int SD, int MB, int R>
static inline void vnni_dot(const int8_t* planes, const float* sx, int64_t K, const WeightRef& w, int64_t n,
                            int64_t g0, int64_t g1, int64_t pf, float (*out)[MB]) {
  constexpr int CW = BITS == 4 ? 128 : 64;  // codes per 64-byte chunk
  constexpr int PB = 3 * CW;                // plane bytes per chunk
  constexpr int LC = BITS == 4 ? 8 : 4;     // codes per i32 lane
  const int G = w.group;
  const int64_t gpr = K / G, row_bytes = K * BITS / 8, xplane = (K / CW) * PB;
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
  for (int64_t gb = g0; gb < g1; gb += 16) {
    const int ng = int(std::min<int64_t>(16, g1 - gb));
    const __mmask16 gm = __mmask16((1u << ng) - 1u);
    __m512 f[R][MB];
    for (int r = 0; r < R; r++) {
      __builtin_prefetch(w.scales + ((n + R + r) * gpr + gb) * (SD == kF32 ? 4 : 2), 0, 3);
      __builtin_prefetch(w.biases + ((n + R + r) * gpr + gb) * (SD == kF32 ? 4 : 2), 0, 3);
      const __m512 s = load_scales16<SD>(w.scales, (n + r) * gpr + gb, gm);
      for (int m = 0; m < MB; m++) f[r][m] = _mm512_mul_ps(s, _mm512_maskz_loadu_ps(gm, sx + m * gpr + gb));
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
            const __m512i a = _mm512_add_epi32(_mm512_slli_epi32(_mm512_add_epi32(_mm512_slli_epi32(a2, 8), a1), 8), a0);
            // Even and odd chunks feed two accumulator sets: two FMA dependency chains per row.
            const __m512 fa = _mm512_cvtepi32_ps(a), fac = _mm512_permutexvar_ps(idx, f[r][m]);
            if (i & 1) acc2[r][m] = _mm512_fmadd_ps(fa, fac, acc2[r][m]);
            else acc[r][m] = _mm512_fmadd_ps(fa, fac, acc[r][m]);
          }
        } else {
          for (int m = 0; m < MB; m++) {
            const int8_t* p = P[m];
            const __m512i p0 = _mm512_loadu_si512(p + 0), p1 = _mm512_loadu_si512(p + 64);
            const __m512i p2 = _mm512_loadu_si512(p + 128);
            const __m512i a2 = _mm512_dpbusd_epi32(zero, v, p0);
            const __m512i a10 = _mm512_dpbusd_epi32(_mm512_slli_epi32(_mm512_dpbusd_epi32(zero, v, p1), 8), v, p2);
            // 8-bit codes: a2 << 16 could overflow i32 (|a2| <= 4 * 255 * 128), so the top digit plane
            // joins in f32: t = a2 * 65536 + a10 (a2 converts exactly; one rounding, as for 4-bit).
            const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a2), _mm512_set1_ps(65536.f), _mm512_cvtepi32_ps(a10));
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
      out[r][m] += _mm512_reduce_add_ps(t);
    }
}

// VNNI tile: whole rows [n, n + R).
template <int BITS, int SD, int MB, int R>
static void gemv_vnni_tile(const int8_t* planes, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                           const float* bias, float* y, int64_t N, int64_t n) {
  const int64_t gpr = K / w.group;
  float out[R][MB] = {};
  vnni_dot<BITS, SD, MB, R>(planes, sx, K, w, n, 0, gpr, gemv_prefetch_distance(R, K * BITS / 8), out);
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) {
      const float v = out[r][m] + scales_dot<SD>(w.biases, (n + r) * gpr, xsum + m * gpr, gpr);
      y[m * N + n + r] = bias ? v + bias[n + r] : v;
    }
}

#endif  // AVX-512 VNNI

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
// plane loads across several rows). Groups are taken 8 at a time: their scales times the x group scales
// form one f32 vector f, and each chunk's i32 lanes (8 consecutive codes each, always of one group)
// pick their group's factor from f with one permute.
template <int SD, int MB>
static void avx2_q4_row(const int8_t* planes, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                         const float* bias, float* y, int64_t N, int64_t n) {
  constexpr int CW = kQ4Chunk, PB = 3 * CW;
  const int G = w.group;
  const int64_t gpr = K / G, row_bytes = K / 2, xplane = (K / CW) * PB;
  const uint8_t* row = w.data + n * row_bytes;
  TilePrefetch pref(row, gemv_prefetch_distance(1, row_bytes));
  const __m128i gshift = _mm_cvtsi32_si128(G == 32 ? 5 : G == 64 ? 6 : 7);
  const __m256i lanes = _mm256_setr_epi32(0, 8, 16, 24, 32, 40, 48, 56);
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
      const __m256i idx = _mm256_srl_epi32(_mm256_add_epi32(_mm256_set1_epi32(int(i * CW)), lanes), gshift);
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
#endif  // AVX2 integer-dot GEMV

#include "gemv_neon_dot.h"

template <int MB>
static void gemv_block(const float* x, const WeightRef& w, const float* bias, float* y) {
  constexpr int R = GemvRows<MB>::R;
  const int64_t K = w.cols, N = w.rows;
  static thread_local Scratch s_xp, s_xsum;
  const bool quant = w.dtype == kQAffine;
  const int64_t gpr = quant ? K / w.group : 0;
  bool vnni = false;  // the integer-dot path runs (VNNI, the AVX2 q4 path or NEON SDOT, below)
  const int8_t* planes = nullptr;
  const float* sx = nullptr;
#if defined(__AVX512VNNI__) && MLX_VL == 16
  static thread_local Scratch s_planes, s_sx;
  if (quant && ((w.bits == 4 && K % 128 == 0) || (w.bits == 8 && K % 64 == 0))) {
    int8_t* pl = s_planes.get<int8_t>(size_t(MB * K * 3));
    float* sc = s_sx.get<float>(size_t(MB * gpr));
    vnni = true;
    for (int m = 0; m < MB && vnni; m++)
      vnni = vnni_prepare(x + m * K, K, w.group, w.bits, pl + m * K * 3, sc + m * gpr);
    planes = pl;
    sx = sc;
  }
#elif defined(__AVX2__) && MLX_VL == 8
  static thread_local Scratch s_planes, s_sx;
  if (quant && w.bits == 4 && K % kQ4Chunk == 0 && (w.group == 32 || w.group == 64 || w.group == 128)) {
    int8_t* pl = s_planes.get<int8_t>(size_t(MB * K * 3));
    float* sc = s_sx.get<float>(size_t(MB * gpr));
    vnni = true;
    for (int m = 0; m < MB && vnni; m++) vnni = avx2_q4_prepare(x + m * K, K, w.group, pl + m * K * 3, sc + m * gpr);
    planes = pl;
    sx = sc;
  }
#elif defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4
  static thread_local Scratch s_planes, s_sx;
  if (quant && (w.bits == 4 || w.bits == 8) && (w.group == 32 || w.group == 64 || w.group == 128)) {
    int8_t* pl = s_planes.get<int8_t>(size_t(MB * K * 3));
    float* sc = s_sx.get<float>(size_t(MB * gpr));
    vnni = true;
    for (int m = 0; m < MB && vnni; m++)
      vnni = neon_dot_prepare(x + m * K, K, w.group, w.bits, pl + m * K * 3, sc + m * gpr);
    planes = pl;
    sx = sc;
  }
#endif
  const bool fast_q = quant && (w.bits == 4 || w.bits == 8) && w.group % (2 * VL) == 0;
  const float* xs = x;
  if ((!vnni && fast_q && w.bits == 4) || w.dtype == kBF16) {
    float* xp = s_xp.get<float>(size_t(MB * K));
    for (int m = 0; m < MB; m++) permute_pairs(x + m * K, K, xp + m * K);
    xs = xp;
  }
  const float* xsum = nullptr;
  if (quant) {
    float* t = s_xsum.get<float>(size_t(MB * gpr));
    for (int m = 0; m < MB; m++)
      for (int64_t g = 0; g < gpr; g++) {
        vf a = vsplat(0.f);
        float s = 0.f;
        const float* xg = x + m * K + g * w.group;
        int c = 0;
        for (; c + VL <= w.group; c += VL) a += vload(xg + c);
        for (; c < w.group; c++) s += xg[c];
        t[m * gpr + g] = hsum(a) + s;
      }
    xsum = t;
  }
  // One row at a time when the x operand of a row pass (f32 x, or the VNNI digit planes) stays in L1 and
  // the kernel is memory-bound (float and VNNI paths). The f32 path of quantized weights is bound by
  // code conversion and x loads, so it always shares each x load across R rows.
  const bool single = (vnni || !quant) && (vnni ? 3 : 4) * MB * K <= 16 * 1024;
  // Grain: enough rows per task that each task streams >= ~64 KB of weights.
  const int64_t row_bytes = quant ? K * w.bits / 8 : K * (w.dtype == kF32 ? 4 : 2);
  const int64_t grain = std::max<int64_t>(R, (64 * 1024) / std::max<int64_t>(1, row_bytes));
  const int sd = w.scale_dtype;
  parallel_for(N, grain, [&](int64_t n0, int64_t n1) {
    if (!quant) {
      auto run = [&](auto dt) {
        constexpr int DT = decltype(dt)::value;
        row_tiles<R>(n0, n1, [&](int64_t n) { gemv_float_tile<DT, MB, R>(xs, x, K, w, bias, y, N, n); },
                     [&](int64_t n) { gemv_float_tile<DT, MB, 1>(xs, x, K, w, bias, y, N, n); }, single);
      };
      if (w.dtype == kBF16) run(std::integral_constant<int, kBF16>());
      else if (w.dtype == kF16) run(std::integral_constant<int, kF16>());
      else run(std::integral_constant<int, kF32>());
      return;
    }
    auto run_q = [&](auto sdc) {
      constexpr int SD = decltype(sdc)::value;
#if defined(__AVX512VNNI__) && MLX_VL == 16
      if (vnni) {
        if (w.bits == 4)
          row_tiles<R>(n0, n1, [&](int64_t n) { gemv_vnni_tile<4, SD, MB, R>(planes, sx, xsum, K, w, bias, y, N, n); },
                       [&](int64_t n) { gemv_vnni_tile<4, SD, MB, 1>(planes, sx, xsum, K, w, bias, y, N, n); }, single);
        else
          row_tiles<R>(n0, n1, [&](int64_t n) { gemv_vnni_tile<8, SD, MB, R>(planes, sx, xsum, K, w, bias, y, N, n); },
                       [&](int64_t n) { gemv_vnni_tile<8, SD, MB, 1>(planes, sx, xsum, K, w, bias, y, N, n); }, single);
        return;
      }
#elif defined(__AVX2__) && MLX_VL == 8
      if (vnni) {  // AVX2 q4 integer dot: always one row at a time (the planes stay in L1/L2, measured faster)
        for (int64_t n = n0; n < n1; n++) avx2_q4_row<SD, MB>(planes, sx, xsum, K, w, bias, y, N, n);
        return;
      }
#elif defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4
      if (vnni) {  // SDOT integer dot, one row at a time (see gemv_neon_dot.h)
        if (w.bits == 4)
          for (int64_t n = n0; n < n1; n++) neon_dot_row<4, SD, MB>(planes, sx, xsum, K, w, bias, y, N, n);
        else
          for (int64_t n = n0; n < n1; n++) neon_dot_row<8, SD, MB>(planes, sx, xsum, K, w, bias, y, N, n);
        return;
      }
#endif
      if (fast_q && w.bits == 4)
        row_tiles<R>(n0, n1, [&](int64_t n) { gemv_q_tile<4, SD, MB, R>(xs, xsum, K, w, bias, y, N, n); },
                     [&](int64_t n) { gemv_q_tile<4, SD, MB, 1>(xs, xsum, K, w, bias, y, N, n); }, single);
      else if (fast_q)
        row_tiles<R>(n0, n1, [&](int64_t n) { gemv_q_tile<8, SD, MB, R>(xs, xsum, K, w, bias, y, N, n); },
                     [&](int64_t n) { gemv_q_tile<8, SD, MB, 1>(xs, xsum, K, w, bias, y, N, n); }, single);
      else
        for (int64_t n = n0; n < n1; n++) gemv_q_generic_row<MB>(x, K, w, bias, y, N, n);
    };
    if (sd == kBF16) run_q(std::integral_constant<int, kBF16>());
    else if (sd == kF16) run_q(std::integral_constant<int, kF16>());
    else run_q(std::integral_constant<int, kF32>());
  });
  (void)planes;
  (void)sx;
  (void)vnni;
}

#include "gemm_xt.h"
#include "gemm_dot.h"

static void matmul(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y) {
  if (M > 2 * kGemvMaxM) {
    // f32 weights are read in place by the transposed-x kernel; the others are decoded, which the
    // dot-form kernel amortizes better (see gemm_dot.h).
    if (w.dtype == kF32) gemm(x, M, w, bias, y);
    else gemm_dot(x, M, w, bias, y);
    return;
  }
  const int64_t K = w.cols, N = w.rows;
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) gemv_block<4>(x + m * K, w, bias, y + m * N);
  switch (M - m) {
    case 3: gemv_block<3>(x + m * K, w, bias, y + m * N); break;
    case 2: gemv_block<2>(x + m * K, w, bias, y + m * N); break;
    case 1: gemv_block<1>(x + m * K, w, bias, y + m * N); break;
    default: break;
  }
}

static void gather_rows(const int32_t* ids, int64_t n, const WeightRef& w, float* out) {
  const int64_t H = w.cols;
  parallel_for(n, 16, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) weight_row_range(w, ids[i], 0, H, out + i * H);
  });
}

// ---------------------------------------------------------------------------------------------
// Norms, softmax, elementwise.

static inline int64_t row_grain(int64_t dim) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, dim)); }

static void rms_norm(const float* x, int64_t rows, int64_t dim, const float* w, float eps, bool plus_one, float* out) {
  parallel_for(rows, row_grain(dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      vf acc = vsplat(0.f);
      int64_t i = 0;
      for (; i + VL <= dim; i += VL) { vf v = vload(xr + i); acc += v * v; }
      float ss = hsum(acc);
      for (; i < dim; i++) ss += xr[i] * xr[i];
      const float inv = 1.0f / std::sqrt(ss / float(dim) + eps);
      for (i = 0; i < dim; i++) {
        const float g = w ? (plus_one ? 1.0f + w[i] : w[i]) : 1.0f;
        o[i] = xr[i] * inv * g;
      }
    }
  });
}

static void layer_norm(const float* x, int64_t rows, int64_t dim, const float* w, const float* b, float eps, float* out) {
  parallel_for(rows, row_grain(dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      double mean = 0;
      for (int64_t i = 0; i < dim; i++) mean += xr[i];
      mean /= double(dim);
      double var = 0;
      for (int64_t i = 0; i < dim; i++) { double d = xr[i] - mean; var += d * d; }
      var /= double(dim);
      const float inv = float(1.0 / std::sqrt(var + double(eps)));
      const float mf = float(mean);
      for (int64_t i = 0; i < dim; i++) {
        float v = (xr[i] - mf) * inv;
        if (w) v *= w[i];
        if (b) v += b[i];
        o[i] = v;
      }
    }
  });
}

static void softmax_row(const float* x, int64_t dim, float* o) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < dim; i++) mx = x[i] > mx ? x[i] : mx;
  if (mx == -INFINITY) {  // fully masked row: define as uniform zero rather than NaN...
    bool any_nan = false;  // ...unless the row holds NaN (the max above skips it): then NaN, not zeros
    for (int64_t i = 0; i < dim; i++) any_nan |= std::isnan(x[i]);
    for (int64_t i = 0; i < dim; i++) o[i] = any_nan ? NAN : 0.f;
    return;
  }
  float sum = 0.f;
  int64_t i = 0;
  vf vs = vsplat(0.f);
  for (; i + VL <= dim; i += VL) { vf e = vexp(vload(x + i) - mx); vstore(o + i, e); vs += e; }
  sum = hsum(vs);
  for (; i < dim; i++) { o[i] = std::exp(x[i] - mx); sum += o[i]; }
  const float inv = 1.0f / sum;
  for (i = 0; i < dim; i++) o[i] *= inv;
}

static void softmax(const float* x, int64_t rows, int64_t dim, float* out) {
  parallel_for(rows, row_grain(dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) softmax_row(x + r * dim, dim, out + r * dim);
  });
}

static inline vf unary_v(int op, vf v) {
  switch (op) {
    case kSilu: return v / (1.0f + vexp(-v));
    // 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)): no cancellation where tanh(u) is near -1.
    case kGeluTanh: return v / (1.0f + vexp(-1.5957691216057308f * (v + 0.044715f * v * v * v)));
    case kRelu: return v < 0.f ? vsplat(0.f) : v;  // NaN passes through (vmax would give 0)
    case kTanh: return vtanh(v);
    case kExp: return vexp(v);
    case kSigmoid: return 1.0f / (1.0f + vexp(-v));
    case kNeg: return -v;
    case kSquare: return v * v;
    default: return v;
  }
}
static inline float unary_s(int op, float v) {
  switch (op) {
    case kSilu: return v / (1.0f + std::exp(-v));
    case kGeluTanh: return v / (1.0f + std::exp(-1.5957691216057308f * (v + 0.044715f * v * v * v)));
    case kGeluErf: return 0.5f * v * (1.0f + std::erf(v * 0.7071067811865476f));
    case kRelu: return v < 0.f ? 0.f : v;  // NaN passes through
    case kTanh: return std::tanh(v);
    case kExp: return std::exp(v);
    case kSigmoid: return 1.0f / (1.0f + std::exp(-v));
    case kNeg: return -v;
    case kSquare: return v * v;
    case kSqrt: return std::sqrt(v);
    default: return v;
  }
}

static void unary(int op, const float* x, int64_t n, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    if (op != kGeluErf && op != kSqrt)
      for (; i + VL <= i1; i += VL) vstore(out + i, unary_v(op, vload(x + i)));
    for (; i < i1; i++) out[i] = unary_s(op, x[i]);
  });
}

static inline float binary_s(int op, float a, float b) {
  switch (op) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return a / b;
    default: return a > b ? a : b;
  }
}

static void binary(int op, const float* a, int64_t n, const float* b, int64_t nb, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    if (nb == n) {
      int64_t i = i0;
      for (; i + VL <= i1; i += VL) {
        vf x = vload(a + i), y = vload(b + i), r;
        switch (op) {
          case kAdd: r = x + y; break;
          case kSub: r = x - y; break;
          case kMul: r = x * y; break;
          case kDiv: r = x / y; break;
          default: r = vmax(x, y); break;
        }
        vstore(out + i, r);
      }
      for (; i < i1; i++) out[i] = binary_s(op, a[i], b[i]);
    } else {
      for (int64_t i = i0; i < i1; i++) out[i] = binary_s(op, a[i], b[i % nb]);
    }
  });
}

static void affine(const float* x, int64_t n, float s, float t, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + VL <= i1; i += VL) vstore(out + i, vload(x + i) * s + t);
    for (; i < i1; i++) out[i] = x[i] * s + t;
  });
}

// out[i] = sum_j c[j] * xs[j][i] for k inputs (k <= kMaxLinComb). Element-wise, so out may be one of the
// inputs. Gemma 3n's AltUp mixes its K residual streams this way every layer.
static void lincomb(const float* const* xs, const float* c, int k, int64_t n, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + VL <= i1; i += VL) {
      vf a = vload(xs[0] + i) * c[0];
      for (int j = 1; j < k; j++) a += vload(xs[j] + i) * c[j];
      vstore(out + i, a);
    }
    for (; i < i1; i++) {
      float a = xs[0][i] * c[0];
      for (int j = 1; j < k; j++) a += xs[j][i] * c[j];
      out[i] = a;
    }
  });
}

// ---------------------------------------------------------------------------------------------
// RoPE. Half-split (NeoX) pairs (i, i + rot/2); interleaved pairs (2i, 2i+1). Dimensions past rot_dim
// pass through. The math per element depends only on the position, so a token rotated at offset p
// alone is bitwise identical to the same token inside a longer sequence.

static void rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* pos,
                 const float* cos_tab, const float* sin_tab, int64_t rot_dim, bool interleaved) {
  const int64_t half = rot_dim / 2;
  parallel_for(n_tok, 8, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const float* c = cos_tab + int64_t(pos[t]) * half;
      const float* s = sin_tab + int64_t(pos[t]) * half;
      for (int64_t h = 0; h < n_heads; h++) {
        float* v = x + (t * n_heads + h) * head_dim;
        if (interleaved) {
          for (int64_t i = 0; i < half; i++) {
            const float a = v[2 * i], b = v[2 * i + 1];
            v[2 * i] = a * c[i] - b * s[i];
            v[2 * i + 1] = b * c[i] + a * s[i];
          }
        } else {
          for (int64_t i = 0; i < half; i++) {
            const float a = v[i], b = v[i + half];
            v[i] = a * c[i] - b * s[i];
            v[i + half] = b * c[i] + a * s[i];
          }
        }
      }
    }
  });
}

#include "attention_impl.h"
#include "audio_impl.h"
#include "moe_impl.h"
#include "vision_impl.h"

static double stream_sum(const uint8_t* p, int64_t bytes) {
  const int64_t n = bytes / int64_t(sizeof(vu));
  std::atomic<uint64_t> total{0};
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    vu a0 = {}, a1 = {}, a2 = {}, a3 = {};
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) {
      vu v0, v1, v2, v3;
      std::memcpy(&v0, p + (i + 0) * sizeof(vu), sizeof(vu));
      std::memcpy(&v1, p + (i + 1) * sizeof(vu), sizeof(vu));
      std::memcpy(&v2, p + (i + 2) * sizeof(vu), sizeof(vu));
      std::memcpy(&v3, p + (i + 3) * sizeof(vu), sizeof(vu));
      a0 += v0; a1 += v1; a2 += v2; a3 += v3;
    }
    for (; i < i1; i++) { vu v; std::memcpy(&v, p + i * sizeof(vu), sizeof(vu)); a0 += v; }
    vu s = a0 + a1 + a2 + a3;
    uint64_t t = 0;
    for (int k = 0; k < VL; k++) t += s[k];
    total += t;
  });
  // Whole 32-bit words past the last full vector.
  uint64_t t = 0;
  for (int64_t b = n * int64_t(sizeof(vu)); b + 4 <= bytes; b += 4) {
    uint32_t w;
    std::memcpy(&w, p + b, 4);
    t += w;
  }
  // The lanes wrap modulo 2^32, so the defined result is the sum of the words modulo 2^32 (a checksum
  // that keeps the reads from being optimised away), the same for every variant and thread count.
  return double(uint32_t(total.load() + t));
}

}  // namespace MLX_NS

namespace MLX_NS {
// Fills the dispatch table by field name, so adding a kernel is one line here (plus its field in
// kernels.h) and the variant files never change.
static inline mlx::KernelTable make_table(const char* name) {
  mlx::KernelTable t{};
  t.name = name;
  t.matmul = matmul;
  t.gather_rows = gather_rows;
  t.rms_norm = rms_norm;
  t.layer_norm = layer_norm;
  t.softmax = softmax;
  t.unary = unary;
  t.binary = binary;
  t.affine = affine;
  t.lincomb = lincomb;
  t.rope = rope;
  t.attention = attention;
  t.stream_sum = stream_sum;
  t.log_mel = log_mel;
  t.conv2d = conv2d;
  t.dwconv1d_causal = dwconv1d_causal;
  t.local_attention = local_attention;
  t.clamp = clamp;
  t.glu = glu;
  t.moe_switch_glu = moe_switch_glu;
  t.dwconv2d = dwconv2d;
  return t;
}
}  // namespace MLX_NS
