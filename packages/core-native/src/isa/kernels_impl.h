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
static inline vf as_f(vu u) { vf f; std::memcpy(&f, &u, sizeof f); return f; }
static inline vu as_u(vf f) { vu u; std::memcpy(&u, &f, sizeof u); return u; }

// u8 -> f32 in two steps: GCC scalarizes a direct u8->float __builtin_convertvector, while
// u8->i32 (vpmovzxbd) then i32->f32 (vcvtdq2ps) stays vectorized.
static inline vf bytes_to_f(vb q) { return __builtin_convertvector(__builtin_convertvector(q, vi), vf); }

// Packed-code decoders for the GEMV hot loop. GCC turns generic u8-vector code into byte extraction
// through general registers, so the x86 variants use intrinsics; other targets use the generic form.
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
  x = vmin(vmax(x, vsplat(-87.33654f)), vsplat(88.72283f));
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
// registers; large M (prefill) packs and dequantizes NB-row panels of W into L1 scratch and runs a
// register-blocked outer-product micro-kernel.

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

// GEMV over float weights: rows [n0, n1) of W against MB rows of x.
template <int MB>
static void gemv_float_rows(const float* x, int64_t K, const WeightRef& w, const float* bias, float* y,
                            int64_t N, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; n++) {
    vf acc[MB][2];
    for (int m = 0; m < MB; m++) acc[m][0] = acc[m][1] = vsplat(0.f);
    const uint8_t* row = w.data + n * K * (w.dtype == kF32 ? 4 : 2);
    int64_t k = 0;
    for (; k + 2 * VL <= K; k += 2 * VL) {
      vf w0 = load_any(row, w.dtype, k), w1 = load_any(row, w.dtype, k + VL);
      for (int m = 0; m < MB; m++) {
        acc[m][0] += w0 * vload(x + m * K + k);
        acc[m][1] += w1 * vload(x + m * K + k + VL);
      }
    }
    float tail[MB] = {};
    for (; k < K; k++) {
      float wk = load_scalar(row, w.dtype, k);
      for (int m = 0; m < MB; m++) tail[m] += wk * x[m * K + k];
    }
    for (int m = 0; m < MB; m++) {
      float s = hsum(acc[m][0] + acc[m][1]) + tail[m];
      y[m * N + n] = bias ? s + bias[n] : s;
    }
  }
}

// x permuted for the packed 4/8-bit layouts: for 4-bit, each block of 2*VL elements is reordered to
// [even elements..., odd elements...] so one VL-byte load yields low nibbles = evens, high = odds.
static void permute_for_q4(const float* x, int64_t K, float* xp) {
  for (int64_t blk = 0; blk < K; blk += 2 * VL)
    for (int j = 0; j < VL; j++) {
      xp[blk + j] = x[blk + 2 * j];
      xp[blk + VL + j] = x[blk + 2 * j + 1];
    }
}

// Quantized GEMV. For 4/8-bit codes the inner loop accumulates sum(q * x) per group in vector lanes
// and applies the group's scale once per group; the bias term is bias * sum(x over the group), with
// the per-group sums of x precomputed once per call (xsum). This keeps the hot loop at
// convert + fma per VL codes, with no per-element dequantization.
template <int SD>
static inline float scale_t(const uint8_t* p, int64_t i) {
  if (SD == kF32) { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
  uint16_t h; std::memcpy(&h, p + 2 * i, 2);
  return SD == kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

template <int MB, int SD>
static void gemv_q_rows(const float* xp, const float* xsum, int64_t K, const WeightRef& w, const float* bias, float* y,
                        int64_t N, int64_t n0, int64_t n1) {
  const int64_t gpr = K / w.group;
  const int64_t row_bytes = K * w.bits / 8;
  const bool fast4 = w.bits == 4 && w.group % (2 * VL) == 0;
  const bool fast8 = w.bits == 8 && w.group % VL == 0;
  float tmp[128];
  for (int64_t n = n0; n < n1; n++) {
    const uint8_t* row = w.data + n * row_bytes;
    vf acc[MB];
    float bacc[MB];
    for (int m = 0; m < MB; m++) { acc[m] = vsplat(0.f); bacc[m] = 0.f; }
    for (int64_t g = 0; g < gpr; g++) {
      const float sg = scale_t<SD>(w.scales, n * gpr + g);
      const float bg = scale_t<SD>(w.biases, n * gpr + g);
      const int64_t c0 = g * w.group;
      if (fast4 || fast8) {
        vf qa[MB];
        for (int m = 0; m < MB; m++) qa[m] = vsplat(0.f);
        if (fast4) {
          for (int64_t c = c0; c < c0 + w.group; c += 2 * VL) {
            vf lo, hi;
            decode_q4(row + (c >> 1), lo, hi);
            for (int m = 0; m < MB; m++) qa[m] += lo * vload(xp + m * K + c) + hi * vload(xp + m * K + c + VL);
          }
        } else {
          for (int64_t c = c0; c < c0 + w.group; c += VL) {
            const vf q = decode_q8(row + c);
            for (int m = 0; m < MB; m++) qa[m] += q * vload(xp + m * K + c);
          }
        }
        for (int m = 0; m < MB; m++) {
          acc[m] += qa[m] * sg;
          bacc[m] += bg * xsum[m * gpr + g];
        }
      } else {
        dequant_row_range(w, n, c0, w.group, tmp);
        for (int64_t c = 0; c < w.group; c += VL) {
          vf wv = vload(tmp + c);
          for (int m = 0; m < MB; m++) acc[m] += wv * vload(xp + m * K + c0 + c);
        }
      }
    }
    for (int m = 0; m < MB; m++) {
      float v = hsum(acc[m]) + bacc[m];
      y[m * N + n] = bias ? v + bias[n] : v;
    }
  }
}

template <int MB>
static void gemv_block(const float* x, const WeightRef& w, const float* bias, float* y) {
  const int64_t K = w.cols, N = w.rows;
  const float* xs = x;
  std::unique_ptr<float[]> xp;
  const bool quant = w.dtype == kQAffine;
  std::unique_ptr<float[]> xsum;
  if (quant && w.bits == 4 && w.group % (2 * VL) == 0) {
    xp.reset(new float[size_t(MB * K)]);
    for (int m = 0; m < MB; m++) permute_for_q4(x + m * K, K, xp.get() + m * K);
    xs = xp.get();
  }
  if (quant) {
    const int64_t gpr = K / w.group;
    xsum.reset(new float[size_t(MB * gpr)]);
    for (int m = 0; m < MB; m++)
      for (int64_t g = 0; g < gpr; g++) {
        float t = 0.f;
        for (int64_t c = g * w.group; c < (g + 1) * w.group; c++) t += x[m * K + c];
        xsum[m * gpr + g] = t;
      }
  }
  // Grain: enough rows per task that each task streams >= ~64 KB of weights.
  const int64_t row_bytes = quant ? K * w.bits / 8 : K * (w.dtype == kF32 ? 4 : 2);
  const int64_t grain = std::max<int64_t>(4, (64 * 1024) / std::max<int64_t>(1, row_bytes));
  parallel_for(N, grain, [&](int64_t n0, int64_t n1) {
    if (quant) {
      if (w.scale_dtype == kBF16) gemv_q_rows<MB, kBF16>(xs, xsum.get(), K, w, bias, y, N, n0, n1);
      else if (w.scale_dtype == kF16) gemv_q_rows<MB, kF16>(xs, xsum.get(), K, w, bias, y, N, n0, n1);
      else gemv_q_rows<MB, kF32>(xs, xsum.get(), K, w, bias, y, N, n0, n1);
    }
    else {
      gemv_float_rows<MB>(xs, K, w, bias, y, N, n0, n1);
    }
  });
}

// GEMM micro-kernel: acc[MR][2 vectors] += x[m, k] * Wp[k, 0..NB) over kc steps.
constexpr int NB = 2 * VL;
constexpr int MR = 6;
constexpr int64_t KC = 256;

template <int R>
static void micro(const float* x, int64_t ldx, const float* wp, int64_t kc, float* y, int64_t ldy, int ncols) {
  vf acc[R][2];
  for (int r = 0; r < R; r++) {
    if (ncols == NB) {
      acc[r][0] = vload(y + r * ldy);
      acc[r][1] = vload(y + r * ldy + VL);
    } else {
      float t[NB] = {};
      for (int j = 0; j < ncols; j++) t[j] = y[r * ldy + j];
      acc[r][0] = vload(t);
      acc[r][1] = vload(t + VL);
    }
  }
  for (int64_t k = 0; k < kc; k++) {
    const vf w0 = vload(wp + k * NB), w1 = vload(wp + k * NB + VL);
    for (int r = 0; r < R; r++) {
      const vf xv = vsplat(x[r * ldx + k]);
      acc[r][0] += xv * w0;
      acc[r][1] += xv * w1;
    }
  }
  for (int r = 0; r < R; r++) {
    if (ncols == NB) {
      vstore(y + r * ldy, acc[r][0]);
      vstore(y + r * ldy + VL, acc[r][1]);
    } else {
      float t[NB];
      vstore(t, acc[r][0]);
      vstore(t + VL, acc[r][1]);
      for (int j = 0; j < ncols; j++) y[r * ldy + j] = t[j];
    }
  }
}

static void gemm(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y) {
  const int64_t K = w.cols, N = w.rows;
  const int64_t panels = (N + NB - 1) / NB;
  // KC must hold whole quantization groups so panels dequantize group-aligned.
  int64_t kc_step = KC;
  if (w.dtype == kQAffine) kc_step = std::max<int64_t>(w.group, (KC / w.group) * w.group);
  parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
    std::unique_ptr<float[]> rowbuf(new float[size_t(kc_step)]);
    std::unique_ptr<float[]> wp(new float[size_t(kc_step * NB)]);
    for (int64_t p = p0; p < p1; p++) {
      const int64_t n0 = p * NB;
      const int ncols = int(std::min<int64_t>(NB, N - n0));
      for (int64_t m = 0; m < M; m++)
        for (int j = 0; j < ncols; j++) y[m * N + n0 + j] = bias ? bias[n0 + j] : 0.f;
      for (int64_t k0 = 0; k0 < K; k0 += kc_step) {
        const int64_t kc = std::min<int64_t>(kc_step, K - k0);
        // Pack: wp[k, j] = W[n0 + j, k0 + k], zero for missing columns.
        for (int j = 0; j < NB; j++) {
          if (j < ncols) {
            weight_row_range(w, n0 + j, k0, kc, rowbuf.get());
            for (int64_t k = 0; k < kc; k++) wp[k * NB + j] = rowbuf[k];
          } else {
            for (int64_t k = 0; k < kc; k++) wp[k * NB + j] = 0.f;
          }
        }
        int64_t m = 0;
        for (; m + MR <= M; m += MR) micro<MR>(x + m * K + k0, K, wp.get(), kc, y + m * N + n0, N, ncols);
        switch (M - m) {
          case 5: micro<5>(x + m * K + k0, K, wp.get(), kc, y + m * N + n0, N, ncols); break;
          case 4: micro<4>(x + m * K + k0, K, wp.get(), kc, y + m * N + n0, N, ncols); break;
          case 3: micro<3>(x + m * K + k0, K, wp.get(), kc, y + m * N + n0, N, ncols); break;
          case 2: micro<2>(x + m * K + k0, K, wp.get(), kc, y + m * N + n0, N, ncols); break;
          case 1: micro<1>(x + m * K + k0, K, wp.get(), kc, y + m * N + n0, N, ncols); break;
          default: break;
        }
      }
    }
  });
}

static void matmul(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y) {
  if (M > 2 * kGemvMaxM) { gemm(x, M, w, bias, y); return; }
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
  if (mx == -INFINITY) {  // fully masked row: define as uniform zero rather than NaN
    for (int64_t i = 0; i < dim; i++) o[i] = 0.f;
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
    case kGeluTanh: return 0.5f * v * (1.0f + vtanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case kRelu: return vmax(v, vsplat(0.f));
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
    case kGeluTanh: return 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case kGeluErf: return 0.5f * v * (1.0f + std::erf(v * 0.7071067811865476f));
    case kRelu: return v > 0.f ? v : 0.f;
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
  return double(total.load());
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
  return t;
}
}  // namespace MLX_NS
