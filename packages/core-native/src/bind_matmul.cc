// matmul(x, M, weight, bias|null, out), gather(ids, weight, out) and the process-wide matmul precision
// (setMatmulPrecision / matmulPrecision): "exact" (default) keeps activations f32 everywhere; "fast" and
// "int8" let quantized GEMMs (M > 16) quantize activations per weight group to 16 bits (two int8 digit
// planes) or 8 bits and use integer dot products (isa/gemm_q8act.h); "mixed" gives 8 bits to the
// weights marked feed-forward (`ffn`: the MLP projections, most of a prefill's multiply-adds) and
// 16 bits to the rest (attention projections, routers, the head), whose errors the models amplify most;
// "balanced" gives 8 bits only to the MLP's input projections (`ffn: "input"`, gate / up: ~2/3 of the
// MLP's multiply-adds, over a normalized hidden state) and keeps 16 bits for the down projection, whose
// input (the gated product) is heavy-tailed. With all three on 8 bits (`mixed`) one fixture had a decided
// disagreement; with gate / up alone none has (docs/benchmarks.md, "8-bit gate/up activations").
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

#include "threadpool.h"

#include <cstdlib>

#include "args.h"
#include "cpu.h"
#include "bindings.h"

namespace mlx {
namespace {

// The process-wide precision, one value so a reader never sees half of a change. kPlanes gives the
// activation planes of quantized matmuls per mode: 0 exact, 2 (16-bit) or 1 (8-bit), per FfnRole
// (unmarked, MLP of unstated role, MLP input, MLP output).
enum Precision : int { kExact = 0, kFast = 1, kInt8 = 2, kMixed = 3, kBalanced = 4 };
constexpr const char* kPrecisionNames[] = {"exact", "fast", "int8", "mixed", "balanced"};
constexpr int kPlanes[][4] = {{0, 0, 0, 0}, {2, 2, 2, 2}, {1, 1, 1, 1}, {2, 1, 1, 1}, {2, 2, 1, 2}};
std::atomic<int> g_precision{kExact};

// Whether the CPU runs "fast" GEMMs (M > kMatmulGemvMaxRows) through the exact kernel (see detect_cpu's
// narrow_int_multiply), only for the avx2 variant: the one such CPUs select. MLXCEL_FAST_GEMM=int16
// keeps the integer GEMM anyway (to measure it).
bool fast_gemm_is_exact() {
  static const bool cpu = detect_cpu().narrow_int_multiply;
  if (!cpu || std::strcmp(kernels().name, "avx2") != 0) return false;
  static const bool forced_int = [] {
    const char* e = std::getenv("MLXCEL_FAST_GEMM");
    return e && std::strcmp(e, "int16") == 0;
  }();
  return !forced_int;
}

// y = x . W^T (+ bias) in the process-wide precision: the integer-activation kernels where the weight's
// activation width (kPlanes) is not exact and they apply, else the f32 ones.
void run_matmul(const KernelTable& k, const float* x, int64_t M, const WeightRef& w, const float* bias, float* y) {
  int planes = kPlanes[g_precision.load(std::memory_order_relaxed)][w.ffn];
  // Zen 1: the 16-bit activations' GEMM (two planes) is slower than the exact f32 one, so "fast"
  // prefill takes the exact GEMM there (more accurate too); decode's GEMV keeps them (1.4x exact).
  if (planes == 2 && M > kMatmulGemvMaxRows && fast_gemm_is_exact()) planes = 0;
  if (!(planes && k.matmul_q8act(x, M, w, bias, y, planes))) k.matmul(x, M, w, bias, y);
}

Napi::Value Matmul(const Napi::CallbackInfo& info) {
  const char* fn = "matmul";
  int64_t M = int_arg(info[1], fn, "M", 0, int64_t(1) << 32);
  WeightRef w = weight_arg(info[2], fn, "weight");
  const float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, M, w.cols));
  const float* bias = is_nullish(info[3]) ? nullptr : f32_arg(info[3], fn, "bias", w.rows);
  float* y = f32_arg(info[4], fn, "out", count_of(info.Env(), fn, M, w.rows));
  if (M > 0 && w.rows > 0) run_matmul(kernels(), x, M, w, bias, y);
  return info.Env().Undefined();
}

// matmulShared(x, M, weights, biases | null, outs): outs[j] = x . weights[j]^T (+ biases[j]) for up to
// kMaxSharedGemv weights over the same x (a layer's q / k / v, or gate / up). Where the running kernels
// can (gemv_shared: M <= 16, every weight tiled and alike, one activation width) it is one pass over all
// the weights' rows; otherwise one matmul per weight. Either way each outs[j] holds exactly the bits
// matmul(x, M, weights[j], biases[j], outs[j]) gives.
Napi::Value MatmulShared(const Napi::CallbackInfo& info) {
  const char* fn = "matmulShared";
  Napi::Env env = info.Env();
  const int64_t M = int_arg(info[1], fn, "M", 0, int64_t(1) << 32);
  if (!info[2].IsArray()) throw_type(env, "matmulShared: weights must be an array of weights");
  Napi::Array wa = info[2].As<Napi::Array>();
  const int n = int(wa.Length());
  if (n < 1 || n > kMaxSharedGemv)
    throw_range(env, "matmulShared: weights must hold 1 to " + std::to_string(kMaxSharedGemv) + " weights (got " + std::to_string(n) + ")");
  const bool has_biases = !is_nullish(info[3]);
  if (has_biases && !(info[3].IsArray() && info[3].As<Napi::Array>().Length() == uint32_t(n)))
    throw_type(env, "matmulShared: biases must be null or an array with one bias (or null) per weight");
  if (!(info[4].IsArray() && info[4].As<Napi::Array>().Length() == uint32_t(n)))
    throw_type(env, "matmulShared: outs must be an array with one Float32Array per weight");
  Napi::Array ba = has_biases ? info[3].As<Napi::Array>() : Napi::Array(), oa = info[4].As<Napi::Array>();
  WeightRef ws[kMaxSharedGemv];
  const float* biases[kMaxSharedGemv];
  float* ys[kMaxSharedGemv];
  // Argument names for the error messages, built by no call that succeeds (decode makes hundreds a step).
  static const char* const kWeightNames[] = {"weights[0]", "weights[1]", "weights[2]", "weights[3]", "weights[4]", "weights[5]", "weights[6]", "weights[7]"};
  static const char* const kBiasNames[] = {"biases[0]", "biases[1]", "biases[2]", "biases[3]", "biases[4]", "biases[5]", "biases[6]", "biases[7]"};
  static const char* const kOutNames[] = {"outs[0]", "outs[1]", "outs[2]", "outs[3]", "outs[4]", "outs[5]", "outs[6]", "outs[7]"};
  static_assert(sizeof kWeightNames / sizeof kWeightNames[0] == kMaxSharedGemv, "one name per weight");
  for (int j = 0; j < n; j++) {
    ws[j] = weight_arg(wa.Get(uint32_t(j)), fn, kWeightNames[j]);
    if (ws[j].cols != ws[0].cols)
      throw_range(env, std::string("matmulShared: ") + kWeightNames[j] + " has " + std::to_string(ws[j].cols) + " columns, weights[0] " +
                           std::to_string(ws[0].cols) + " (they must share x)");
    const Napi::Value b = has_biases ? ba.Get(uint32_t(j)) : env.Null();
    biases[j] = is_nullish(b) ? nullptr : f32_arg(b, fn, kBiasNames[j], ws[j].rows);
    ys[j] = f32_arg(oa.Get(uint32_t(j)), fn, kOutNames[j], count_of(env, fn, M, ws[j].rows));
  }
  const float* x = f32_arg(info[0], fn, "x", count_of(env, fn, M, ws[0].cols));
  // x is read while outputs are written (and the outputs are written side by side): none may overlap.
  auto overlaps = [](const void* a, int64_t an, const void* b, int64_t bn) {
    const char *p = static_cast<const char*>(a), *q = static_cast<const char*>(b);
    return p < q + bn && q < p + an;
  };
  for (int j = 0; j < n; j++) {
    const int64_t bytes = M * ws[j].rows * 4;
    if (overlaps(ys[j], bytes, x, M * ws[0].cols * 4))
      throw_range(env, "matmulShared: outs[" + std::to_string(j) + "] overlaps x");
    for (int i = 0; i < j; i++)
      if (overlaps(ys[j], bytes, ys[i], M * ws[i].rows * 4))
        throw_range(env, "matmulShared: outs[" + std::to_string(j) + "] overlaps outs[" + std::to_string(i) + "]");
  }
  if (M == 0) return env.Undefined();
  const KernelTable& k = kernels();
  const int prec = g_precision.load(std::memory_order_relaxed);
  bool alike = true;  // one activation width for all (an MLP role can change it)
  for (int j = 1; j < n; j++) alike = alike && kPlanes[prec][ws[j].ffn] == kPlanes[prec][ws[0].ffn];
  if (alike && k.gemv_shared && k.gemv_shared(x, M, ws, biases, ys, n, kPlanes[prec][ws[0].ffn])) return env.Undefined();
  for (int j = 0; j < n; j++)
    if (ws[j].rows > 0) run_matmul(k, x, M, ws[j], biases[j], ys[j]);
  return env.Undefined();
}

constexpr int kPrecisionCount = int(sizeof kPrecisionNames / sizeof kPrecisionNames[0]);
static_assert(kPrecisionCount == kBalanced + 1 && sizeof kPlanes / sizeof kPlanes[0] == kPrecisionCount,
              "one name and one kPlanes row per Precision");

Napi::Value SetMatmulPrecision(const Napi::CallbackInfo& info) {
  const std::string mode = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : std::string();
  for (int p = 0; p < kPrecisionCount; p++)
    if (mode == kPrecisionNames[p]) {
      g_precision.store(p);
      return Napi::String::New(info.Env(), mode);
    }
  // "mode must be "exact", "fast", ... or "balanced"", from the names themselves.
  std::string msg = "setMatmulPrecision: mode must be ";
  for (int p = 0; p < kPrecisionCount; p++)
    msg += std::string(p == 0 ? "" : p + 1 == kPrecisionCount ? " or " : ", ") + "\"" + kPrecisionNames[p] + "\"";
  throw_type(info.Env(), msg);
}

// Every mode setMatmulPrecision takes, in order (the package exports them as MATMUL_PRECISIONS).
Napi::Value MatmulPrecisions(const Napi::CallbackInfo& info) {
  Napi::Array out = Napi::Array::New(info.Env(), kPrecisionCount);
  for (int p = 0; p < kPrecisionCount; p++) out.Set(uint32_t(p), Napi::String::New(info.Env(), kPrecisionNames[p]));
  return out;
}

Napi::Value MatmulPrecision(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), kPrecisionNames[g_precision.load()]);
}

Napi::Value Gather(const Napi::CallbackInfo& info) {
  const char* fn = "gather";
  WeightRef w = weight_arg(info[1], fn, "weight");
  if (!info[0].IsTypedArray()) throw_type(info.Env(), "gather: ids must be an Int32Array");
  int64_t n = int64_t(info[0].As<Napi::TypedArray>().ElementLength());
  const int32_t* ids = i32_arg(info[0], fn, "ids", n);
  for (int64_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= w.rows)
      throw_range(info.Env(), "gather: ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                                  " is outside the table's " + std::to_string(w.rows) + " rows");
  float* out = f32_arg(info[2], fn, "out", count_of(info.Env(), fn, n, w.cols));
  kernels().gather_rows(ids, n, w, out);
  return info.Env().Undefined();
}

// packWeightTiles(weight, { data, scales, biases }): writes a 4- or 8-bit row-layout weight in the 16-row tile layout
// (kWeightTiles16, kernels.h) into the three given buffers, each at least the size of its counterpart and
// either apart from the input or exactly it (in place: tile t occupies the bytes of rows 16t .. 16t + 15,
// so each tile is copied aside and written back over itself). Pure data movement: the layout holds the
// same codes, scales and biases.
Napi::Value PackWeightTiles(const Napi::CallbackInfo& info) {
  const char* fn = "packWeightTiles";
  Napi::Env env = info.Env();
  WeightRef w = weight_arg(info[0], fn, "weight");
  if (w.dtype != kQAffine || w.layout != kWeightRows)
    throw_range(env, "packWeightTiles: weight must be an MLX affine quantized weight in the row layout");
  if (!tiles_shape_ok(w))
    throw_range(env, "packWeightTiles: the 16-row tile layout needs 4- or 8-bit codes with cols a multiple of 64 and rows a multiple of 16 (got " +
                         std::to_string(w.bits) + "-bit [" + std::to_string(w.rows) + ", " + std::to_string(w.cols) + "])");
  if (!info[1].IsObject()) throw_type(env, "packWeightTiles: out must be an object { data, scales, biases }");
  Napi::Object o = info[1].As<Napi::Object>();
  const int64_t K = w.cols, gpr = K / w.group, sb = w.scale_dtype == kF32 ? 4 : 2;
  const int64_t row_bytes = K * w.bits / 8;
  const size_t code_bytes = size_t(count_of(env, fn, w.rows, row_bytes)), scale_bytes = size_t(count_of(env, fn, w.rows, gpr, sb));
  Bytes d = bytes_arg(o.Get("data"), fn, "out.data"), s = bytes_arg(o.Get("scales"), fn, "out.scales"), b = bytes_arg(o.Get("biases"), fn, "out.biases");
  auto check = [&](const Bytes& x, size_t need, const char* what, std::initializer_list<std::pair<const uint8_t*, size_t>> inputs) {
    if (x.size < need)
      throw_range(env, std::string("packWeightTiles: out.") + what + " has " + std::to_string(x.size) + " bytes, needs " + std::to_string(need));
    for (auto in : inputs)
      if (x.data < in.first + in.second && in.first < x.data + need && !(x.data == in.first && need == in.second))
        throw_range(env, std::string("packWeightTiles: out.") + what + " overlaps the input weight (only the very same bytes, in place, may)");
  };
  const std::initializer_list<std::pair<const uint8_t*, size_t>> ins = {{w.data, code_bytes}, {w.scales, scale_bytes}, {w.biases, scale_bytes}};
  check(d, code_bytes, "data", ins);
  check(s, scale_bytes, "scales", ins);
  check(b, scale_bytes, "biases", ins);
  const int64_t words = row_bytes / 4, tile_code = 16 * row_bytes, tile_scale = 16 * gpr * sb;
  parallel_for(w.rows / 16, 4, [&](int64_t t0, int64_t t1) {
    std::vector<uint8_t> code(static_cast<size_t>(tile_code)), sc(static_cast<size_t>(tile_scale)), bi(static_cast<size_t>(tile_scale));
    for (int64_t t = t0; t < t1; t++) {
      // The tile's source (rows 16t .. 16t + 15) aside first: in place, its bytes are the destination.
      std::memcpy(code.data(), w.data + t * tile_code, size_t(tile_code));
      std::memcpy(sc.data(), w.scales + t * tile_scale, size_t(tile_scale));
      std::memcpy(bi.data(), w.biases + t * tile_scale, size_t(tile_scale));
      for (int r = 0; r < 16; r++) {
        const uint8_t* src = code.data() + r * row_bytes;
        uint8_t* dst = d.data + t * tile_code + r * 4;
        for (int64_t j = 0; j < words; j++) std::memcpy(dst + j * 64, src + j * 4, 4);
        for (int64_t g = 0; g < gpr; g++) {
          const int64_t from = (r * gpr + g) * sb, to = t * tile_scale + (g * 16 + r) * sb;
          std::memcpy(s.data + to, sc.data() + from, size_t(sb));
          std::memcpy(b.data + to, bi.data() + from, size_t(sb));
        }
      }
    }
  });
  return env.Undefined();
}

// weightTileLayout(): whether the running kernels read the 16-row tile layout (so a loader should repack).
Napi::Value WeightTileLayout(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), kernels().weight_tiles); }

}  // namespace

void RegisterMatmul(Napi::Env env, Napi::Object exports) {
  exports.Set("matmul", Napi::Function::New(env, Matmul, "matmul"));
  exports.Set("matmulShared", Napi::Function::New(env, MatmulShared, "matmulShared"));
  exports.Set("gather", Napi::Function::New(env, Gather, "gather"));
  exports.Set("packWeightTiles", Napi::Function::New(env, PackWeightTiles, "packWeightTiles"));
  exports.Set("weightTileLayout", Napi::Function::New(env, WeightTileLayout, "weightTileLayout"));
  exports.Set("setMatmulPrecision", Napi::Function::New(env, SetMatmulPrecision, "setMatmulPrecision"));
  exports.Set("matmulPrecision", Napi::Function::New(env, MatmulPrecision, "matmulPrecision"));
  exports.Set("matmulPrecisions", Napi::Function::New(env, MatmulPrecisions, "matmulPrecisions"));
}

}  // namespace mlx
