// Weight decoders: packed MLX affine codes (any bit width; vector fast paths for 4 and 8 bits) and
// f16/bf16 rows to f32, one group or row block at a time. Decoded codes are exact integers.
// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

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

// Elements [c0, c0 + n) (whole groups) of row r of a kWeightTiles16 weight as a one-row kWeightRows weight
// of n columns, its codes, scales and biases copied into buf: the row readers that are not written for
// tiles (gather, the exact prefill GEMM's decode, the f32 GEMV of a non-finite x) read it through this.
struct TiledRowBuf {
  Scratch codes, scales, biases;
};
static WeightRef tiled_row_view(const WeightRef& w, int64_t r, int64_t c0, int64_t n, TiledRowBuf& buf) {
  const int64_t K = w.cols, G = w.group, gpr = K / G, t = r / 16, lane = r % 16, cw = 32 / w.bits;  // codes per word
  const uint32_t* words = reinterpret_cast<const uint32_t*>(w.data) + t * (K / cw) * 16 + lane;
  uint32_t* c = buf.codes.get<uint32_t>(size_t(n / cw));
  for (int64_t j = 0; j < n / cw; j++) c[j] = words[(c0 / cw + j) * 16];
  const int sb = w.scale_dtype == kF32 ? 4 : 2;
  const int64_t ng = n / G;
  uint8_t* s = buf.scales.get<uint8_t>(size_t(ng * sb));
  uint8_t* b = buf.biases.get<uint8_t>(size_t(ng * sb));
  for (int64_t g = 0; g < ng; g++) {
    const int64_t at = ((t * gpr + c0 / G + g) * 16 + lane) * sb;
    std::memcpy(s + g * sb, w.scales + at, size_t(sb));
    std::memcpy(b + g * sb, w.biases + at, size_t(sb));
  }
  WeightRef v = w;
  v.layout = kWeightRows;
  v.rows = 1;
  v.cols = n;
  v.data = reinterpret_cast<const uint8_t*>(c);
  v.scales = s;
  v.biases = b;
  return v;
}

// Dequantizes elements [c0, c0 + n) of row r into out (natural order). n is a whole number of groups.
static void dequant_row_range(const WeightRef& w, int64_t r, int64_t c0, int64_t n, float* out) {
  if (w.layout == kWeightTiles16) {
    static thread_local TiledRowBuf buf;
    dequant_row_range(tiled_row_view(w, r, c0, n, buf), 0, 0, n, out);
    return;
  }
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
  if (w.layout == kWeightTiles16) {
    static thread_local TiledRowBuf buf;
    decode_row_block(tiled_row_view(w, r, c0, n, buf), 0, 0, n, out);
    return;
  }
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

// A scale or bias of dtype SD (f32/f16/bf16) as f32, with the dtype known at compile time.
template <int SD>
static inline float scale_t(const uint8_t* p, int64_t i) {
  if (SD == kF32) { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
  uint16_t h; std::memcpy(&h, p + 2 * i, 2);
  return SD == kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
}
