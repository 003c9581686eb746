// The contract between the N-API bindings (one translation unit set, no ISA flags) and the kernel
// variants (compiled once per ISA). Bindings validate every argument before a kernel sees it, so kernels
// may assume well-formed shapes and in-bounds buffers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mlx {

// Storage dtypes a kernel can read. The numbering is part of the JS API (see lib/index.d.ts).
enum DType : int { kF32 = 0, kF16 = 1, kBF16 = 2, kQAffine = 3 };

// A weight matrix of logical shape [rows, cols] (a Linear's [out, in], an embedding's [vocab, hidden]).
// For MLX affine quantization, `data` is the packed U32 stream ([rows, cols*bits/32] words) and
// scales/biases are [rows, cols/group] in `scale_dtype`; W[r,c] = scale*q + bias.
struct WeightRef {
  int dtype = kF32;
  const uint8_t* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  const uint8_t* scales = nullptr;
  const uint8_t* biases = nullptr;
  int scale_dtype = kF32;
  int bits = 0;
  int group = 0;
  // Where the weight sits in a feed-forward (MLP) block (FfnRole): picks its activation width in the
  // "mixed" and "balanced" matmul precisions (bind_matmul.cc). Read by no kernel.
  int ffn = 0;
  // kWeightRows: row r's codes at data + r * cols * bits / 8, its scales / biases at r * groups.
  // kWeightTiles16 (4- or 8-bit codes; rows % 16 == 0, cols % 64 == 0; written by
  // packWeightTiles): 16 rows interleaved one 32-bit code word (8 codes low nibble first, or 4 bytes) at
  // a time, so that one 64-byte vector holds the same word of 16 rows and an integer dot product's i32
  // lanes are weight rows. With t = r / 16, W = cols * bits / 32 words per row and j = the word: row r's
  // word j is u32 number (t * W + j) * 16 + r % 16 of data, and its group g scale / bias is element
  // (t * groups + g) * 16 + r % 16. Same byte sizes as kWeightRows.
  int layout = 0;
};
enum WeightLayout : int { kWeightRows = 0, kWeightTiles16 = 1 };
// WeightRef::ffn. kFfnInput: a projection of the block's (normalized) input, gate / up; kFfnOutput: the
// down projection, whose input is the gated product; kFfnAny: an MLP weight of unstated role.
enum FfnRole : int { kFfnNone = 0, kFfnAny = 1, kFfnInput = 2, kFfnOutput = 3 };
// Whether an MLX affine weight's shape can take kWeightTiles16 (whole tiles, whole 64-byte chunks).
inline bool tiles_shape_ok(const WeightRef& w) {
  return w.rows % 16 == 0 && (w.bits == 4 || w.bits == 8) && w.cols % 64 == 0;
}

// KV storage read by the attention kernel (packages/cache). A cache hands one or more segments per
// sequence (e.g. a quantized body plus a full-precision staging tail); slots of all segments of a
// sequence are numbered consecutively in segment order (the order of a mask's columns).
enum KvLayout : int { kKvRows = 0, kKvTiles = 1 };
constexpr int kKvTile = 16;  // slots per tile in kKvTiles (a storage layout: fixed for every ISA)
struct KvSegment {
  int dtype = kF32;        // kF32 / kF16 / kBF16, or kQAffine: K 8-bit codes, V v_bits codes (affine per group)
  int layout = kKvRows;    // kKvRows: K [n, H, D], V [n, H, DV] (dtype f32/f16/bf16 only)
                           // kKvTiles: head-major, so one head's keys are one sequential stream. With
                           // i = h*capacity/16 + t (head h, tile t = slot/16) and r = h*capacity + slot:
                           // K tile [D][16] at i*D*16 elements, V row r of DV elements; quantized: K
                           // scales/biases [D/group][16] at i*(D/group)*16, V row r of DV*v_bits/8 bytes
                           // (4-bit: each 32-code chunk as 16 bytes, byte j = code j | code j+16 << 4),
                           // V scales/biases at r*(DV/group)
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  const float* k_scales = nullptr;
  const float* k_biases = nullptr;
  const float* v_scales = nullptr;
  const float* v_biases = nullptr;
  int v_bits = 8;          // quantized V: 8 or 4
  int group = 0;           // quantized: group size along the head dim (32, 64, 128)
  const int32_t* pos = nullptr;  // [n] absolute position per slot; < 0 = empty
  int64_t n = 0;           // slots
  int64_t capacity = 0;    // kKvTiles: slots allocated per head (multiple of 16, >= n)
};
// One sequence of a batched attention call: query rows [q_begin, q_begin + n_q) of q / q_pos / out.
struct AttnSeq {
  int64_t q_begin = 0;
  int64_t n_q = 0;
  const KvSegment* segs = nullptr;
  int n_segs = 0;
  const uint8_t* mask = nullptr;   // optional [mask_heads, n_q, total slots], nonzero = visible (ANDed)
  int mask_heads = 0;
  const int32_t* spans = nullptr;  // optional [n_spans][2] = [start, end) positions attended bidirectionally
  int n_spans = 0;
};

struct AttentionArgs {
  const float* q = nullptr;      // [n_q, n_heads, head_dim]
  int64_t n_q = 0;
  int n_heads = 0;
  int head_dim = 0;              // q/k dim
  int v_dim = 0;                 // v dim (usually == head_dim)
  const int32_t* q_pos = nullptr;  // absolute position of each query row
  const uint8_t* k = nullptr;    // [n_kv, n_kv_heads, head_dim] in kv_dtype
  const uint8_t* v = nullptr;    // [n_kv, n_kv_heads, v_dim] in kv_dtype
  int kv_dtype = kF32;           // kF32, kF16 or kBF16
  int64_t n_kv = 0;
  int n_kv_heads = 0;
  const int32_t* k_pos = nullptr;  // absolute position of each key slot; < 0 marks an empty slot
  float scale = 1.0f;
  float softcap = 0.0f;          // 0 = off; else s = softcap * tanh(s / softcap)
  bool causal = true;            // key visible only if k_pos <= q_pos
  int64_t window = 0;            // 0 = unlimited; else key visible only if q_pos - k_pos < window
  const uint8_t* mask = nullptr; // optional [mask_heads, n_q, n_kv], nonzero = visible (ANDed with the rest)
  int mask_heads = 0;            // 1 (shared by all heads) or n_heads
  float* out = nullptr;          // [n_q, n_heads, v_dim]
  // Batched form (packages/cache): when n_seqs > 0 the flat k/v/k_pos/n_kv/kv_dtype/mask fields are
  // ignored and every sequence brings its own KV segments, mask and spans; q/q_pos/out span all rows.
  const AttnSeq* seqs = nullptr;
  int n_seqs = 0;
  // Phi-3-small block-sparse visibility (ANDed): with bi = q_pos / block, bj = k_pos / block, a key is
  // visible to query head h iff bi - bj < local || (bj + h * head_step + 1) % vert == 0. block 0 = off.
  int64_t bs_block = 0, bs_local = 0, bs_vert = 0, bs_head_step = 0;
};

// Mixture-of-experts SwiGLU block over stacked experts (isa/moe_impl.h). Expert weights are flattened
// along the expert axis: gate and up [E*I, H], or one fused gate_up [E*2I, H] whose block for expert e
// holds its I gate rows then its I up rows; down [E*H, I].
enum MoePath : int { kMoeAuto = 0, kMoeGather = 1, kMoeGrouped = 2 };
struct MoeArgs {
  const float* x = nullptr;        // [T, H]
  int64_t T = 0, H = 0, I = 0, E = 0;
  int k = 0;                       // experts per token
  const int32_t* ids = nullptr;    // [T, k], each in [0, E)
  const float* weights = nullptr;  // [T, k], used as given (no renormalisation here)
  WeightRef gate, up, down;        // up unused when fused
  bool fused = false;              // gate holds the fused gate_up weight
  int act = 0;                     // UnaryOp: kSilu or kGeluTanh
  int path = kMoeGather;           // kMoeGather (per-token GEMV) or kMoeGrouped (sort by expert, GEMM)
  float* out = nullptr;            // [T, H], overwritten; may be x
};

// Audio kernels (isa/audio_impl.h, bind_audio.cc): log-mel front end, channels-last conv2d, banded local
// attention with relative positions.
struct LogMelArgs {
  const float* signal = nullptr;       // padded mono signal; frame t reads samples [t*hop, t*hop + frame_len]
  int64_t n_frames = 0;
  int frame_len = 0;                   // samples windowed per frame
  int hop = 0;
  int fft_size = 0;                    // power of two >= frame_len
  double preemphasis = 0.0;            // 0 = off
  bool preemphasis_htk = true;
  const float* window = nullptr;       // [frame_len]
  const double* mel_filters = nullptr; // [fft_size/2 + 1, n_mel]
  int n_mel = 0;
  int floor_mode = 0;                  // 0: log(mel + floor), 1: log(max(mel, floor))
  double mel_floor = 0.0;
  float* out = nullptr;                // [n_frames, n_mel]
};
struct Conv2dArgs {
  const float* x = nullptr;            // [h, w, cin]
  int64_t h = 0, w = 0;
  int cin = 0, cout = 0, kh = 0, kw = 0, sh = 1, sw = 1, pad_top = 0, pad_left = 0;
  const float* weight = nullptr;       // [cout, kh*kw*cin], (kh, kw, cin) order
  int64_t out_h = 0, out_w = 0;        // zero padding below/right is implied by these
  float* out = nullptr;                // [out_h, out_w, cout]
};
struct LocalAttentionArgs {
  const float* q = nullptr;            // [n, heads, head_dim], already scaled
  const float* k = nullptr;            // [n, heads, head_dim]
  const float* v = nullptr;            // [n, heads, head_dim]
  int64_t n = 0;
  int n_heads = 0, head_dim = 0;
  const float* rel = nullptr;          // [n_rel, heads, head_dim]; row r is distance rel_dist0 - r
  int n_rel = 0, rel_dist0 = 0;
  const uint8_t* valid = nullptr;      // [n] or null (all valid)
  int max_past = 0, max_future = 0;    // admitted: -max_future <= t - s <= max_past
  float softcap = 0.f;                 // 0 = off
  float* out = nullptr;                // [n, heads, head_dim]
};

// Vision kernels (isa/vision_impl.h, bind_vision.cc).
struct DwConv2dArgs {
  const float* x = nullptr;            // [h, w, c]
  int64_t h = 0, w = 0, c = 0;
  int kh = 0, kw = 0, sh = 1, sw = 1, pad_top = 0, pad_left = 0;
  const float* weight = nullptr;       // [kh*kw, c], tap-major
  int64_t out_h = 0, out_w = 0;        // zero padding below/right is implied by these
  float* out = nullptr;                // [out_h, out_w, c]
};
// Resampling of a channels-last map x [h, w, c] -> out [out_h, out_w, c] (MobileNetV5's MSFA).
struct Resample2dArgs {
  const float* x = nullptr;            // [h, w, c]
  int64_t h = 0, w = 0, c = 0;
  int64_t out_h = 0, out_w = 0;
  int kh = 1, kw = 1;                  // avg_pool2d only: kernel = stride, no padding
  float* out = nullptr;                // [out_h, out_w, c]
};

enum UnaryOp : int { kSilu = 0, kGeluTanh = 1, kGeluErf = 2, kRelu = 3, kTanh = 4, kExp = 5, kSigmoid = 6, kNeg = 7, kSquare = 8, kSqrt = 9 };
enum BinaryOp : int { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3, kMax = 4 };

constexpr int kMaxLinComb = 64;  // inputs of one lincomb call
constexpr int kMaxMix = 16;      // inputs and outputs of one mix_streams call

// The most x rows a matmul runs as a GEMV (one pass over W); more run a GEMM (isa/gemv.h kGemvMaxM).
constexpr int64_t kMatmulGemvMaxRows = 16;
// The most weights one gemv_shared call takes (a layer's q / k / v are three).
constexpr int kMaxSharedGemv = 8;

struct KernelTable {
  const char* name;
  // y[M, N] = x[M, K] . W^T (+ bias[N] when bias != nullptr), K = w.cols, N = w.rows.
  void (*matmul)(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y);
  // The same with x quantized per weight group to `planes` int8 digit planes (1: int8, 2: 16-bit;
  // isa/gemm_q8act.h): returns false, y untouched, where it does not apply (then matmul must run); used
  // only in the "fast" (2 planes) and "int8" (1 plane) matmul precisions.
  bool (*matmul_q8act)(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int planes);
  // y_j[M, N_j] = x . W_j^T (+ biases[j] when not null) for n <= kMaxSharedGemv weights sharing x, in one
  // pass over their rows (x prepared once, one parallel region), with `planes` as matmul_q8act's (0: the
  // exact split). Returns false, nothing written, where it does not apply (M > kMatmulGemvMaxRows, weights
  // not all in kWeightTiles16 or not alike in cols / bits / group / scale dtype); then each matmul runs on
  // its own, which gives the same bits. Null in variants that do not read the tile layout.
  bool (*gemv_shared)(const float* x, int64_t M, const WeightRef* ws, const float* const* biases, float* const* ys, int n, int planes);
  // Whether this variant's kernels read kWeightTiles16 weights (matmul and gather; not the MoE kernels).
  // Only then does a loader repack (packWeightTiles): everywhere else the row layout is the fast one.
  bool weight_tiles;
  // out[i, :] = W[ids[i], :] dequantized to f32.
  void (*gather_rows)(const int32_t* ids, int64_t n, const WeightRef& w, float* out);
  // RMSNorm; w may be null (no scale); plus_one uses (1 + w) as Gemma does.
  void (*rms_norm)(const float* x, int64_t rows, int64_t dim, const float* w, float eps, bool plus_one, float* out);
  void (*layer_norm)(const float* x, int64_t rows, int64_t dim, const float* w, const float* b, float eps, float* out);
  void (*softmax)(const float* x, int64_t rows, int64_t dim, float* out);
  // One row's log-softmax (out may be x), its max, the max's first index (-1 when the row is all -inf)
  // and the first NaN's index (n: none). With a NaN, or a max of +-inf, out is unspecified.
  void (*log_softmax_row)(const float* x, int64_t n, float* out, float* max, int64_t* argmax, int64_t* first_nan);
  void (*unary)(int op, const float* x, int64_t n, float* out);
  // out[i] = a[i] op b[i % nb]  (b broadcast along the leading axes when nb < n).
  void (*binary)(int op, const float* a, int64_t n, const float* b, int64_t nb, float* out);
  // out[i] = x[i] * s + t
  void (*affine)(const float* x, int64_t n, float s, float t, float* out);
  // out[i] = sum_{j < k} c[j] * xs[j][i]; 1 <= k <= kMaxLinComb; out may alias an input.
  void (*lincomb)(const float* const* xs, const float* c, int k, int64_t n, float* out);
  // outs[i][t*H + e] = sum_{j < J} c[(t*I + i)*J + j] * xs[j][t*H + e] for rows t < rows; J, I <= kMaxMix;
  // outputs may alias inputs; zero coefficients drop their term.
  void (*mix_streams)(const float* const* xs, int J, const float* c, float* const* outs, int I, int64_t rows, int64_t H);
  // out = cap * tanh(x / cap) (cap > 0; cap == 0: a copy), non-finite elements copied unchanged;
  // returns the first non-finite element's index, or -1. out may be x.
  int64_t (*softcap_check)(const float* x, int64_t n, float cap, float* out);
  // x [rows, 2*half] = [gate | up] -> out [rows, half] = act(gate) * up, act = kSilu or kGeluTanh.
  void (*gated_act)(const float* x, int64_t rows, int64_t half, int act, float* out);
  // In place over rows of width dim: x <- max(x - (mean + std * z), 0) (population std; Gemma 3n's
  // activation sparsity).
  void (*gaussian_topk)(float* x, int64_t rows, int64_t dim, double z);
  // In-place rotary embedding on x[n_tok, n_heads, head_dim] using cos/sin tables [tab_rows, rot_dim/2].
  void (*rope)(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* pos,
               const float* cos_tab, const float* sin_tab, int64_t rot_dim, bool interleaved);
  void (*attention)(const AttentionArgs& a);
  // Sum of the buffer's whole little-endian 32-bit words modulo 2^32 (read-bandwidth probe for the benchmarks).
  double (*stream_sum)(const uint8_t* p, int64_t bytes);
  // Audio (isa/audio_impl.h).
  void (*log_mel)(const LogMelArgs& a);
  void (*conv2d)(const Conv2dArgs& a);
  // out[t, c] = sum_k w[c, k] * x[t - (kk - 1) + k, c] (causal, zero before t = 0); x, out [T, C], w [C, kk].
  void (*dwconv1d_causal)(const float* x, int64_t T, int64_t C, const float* w, int kk, float* out);
  void (*local_attention)(const LocalAttentionArgs& a);
  void (*clamp)(const float* x, int64_t n, float lo, float hi, float* out);
  // x [rows, 2*half] = [a | b] -> out [rows, half] = a * sigmoid(b).
  void (*glu)(const float* x, int64_t rows, int64_t half, float* out);
  // out[t] = sum_j weights[t,j] * down_e(act(gate_e(x_t)) * up_e(x_t)), e = ids[t,j].
  void (*moe_switch_glu)(const MoeArgs& a);
  // Depthwise conv2d, channels-last (isa/vision_impl.h).
  void (*dwconv2d)(const DwConv2dArgs& a);
  // MSFA resampling, channels-last (isa/vision_impl.h): average pool with kernel = stride (out_h = h / kh),
  // nearest (src = floor(dst * in / out)) and bilinear (align_corners = false, no antialias) resizes.
  void (*avg_pool2d)(const Resample2dArgs& a);
  void (*resize_nearest2d)(const Resample2dArgs& a);
  void (*resize_bilinear2d)(const Resample2dArgs& a);
};

// Defined by each variant's translation unit; call one only where the CPU has that variant's ISA.
const KernelTable& scalar_kernels();
#if defined(MLX_HAVE_X86_VARIANTS)
const KernelTable& avx2_kernels();
const KernelTable& avx2vnni_kernels();
const KernelTable& avx512_kernels();
const KernelTable& avx512vnni_kernels();
const KernelTable& avx512amx_kernels();
#endif
#if defined(MLX_HAVE_NEON_VARIANT)
const KernelTable& neon_kernels();
#endif
#if defined(MLX_HAVE_NEON_DOTPROD_VARIANT)
const KernelTable& neon_dotprod_kernels();
#endif

// The variant chosen at load time (MLXCEL_ISA overrides; see cpu.cc).
const KernelTable& kernels();

}  // namespace mlx
