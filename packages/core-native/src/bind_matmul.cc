// matmul(x, M, weight, bias|null, out), gather(ids, weight, out) and the process-wide matmul precision
// (setMatmulPrecision / matmulPrecision): "exact" (default) keeps activations f32 everywhere; "fast" and
// "int8" let quantized GEMMs (M > 16) quantize activations per weight group to 16 bits (two int8 digit
// planes) or 8 bits and use integer dot products (isa/gemm_q8act.h); "mixed" gives 8 bits to the
// weights marked feed-forward (`ffn: true`: the MLP projections, most of a prefill's multiply-adds) and
// 16 bits to the rest (attention projections, routers, the head), whose errors the models amplify most.
#include <atomic>

#include "args.h"
#include "bindings.h"

namespace mlx {
namespace {

// The process-wide precision, one value so a reader never sees half of a change. kPlanes gives the
// activation planes of quantized matmuls per mode: 0 exact, 2 (16-bit) or 1 (8-bit), for unmarked
// weights and for weights marked ffn.
enum Precision : int { kExact = 0, kFast = 1, kInt8 = 2, kMixed = 3 };
constexpr const char* kPrecisionNames[] = {"exact", "fast", "int8", "mixed"};
constexpr int kPlanes[][2] = {{0, 0}, {2, 2}, {1, 1}, {2, 1}};
std::atomic<int> g_precision{kExact};

Napi::Value Matmul(const Napi::CallbackInfo& info) {
  const char* fn = "matmul";
  int64_t M = int_arg(info[1], fn, "M", 0, int64_t(1) << 32);
  WeightRef w = weight_arg(info[2], fn, "weight");
  const float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, M, w.cols));
  const float* bias = is_nullish(info[3]) ? nullptr : f32_arg(info[3], fn, "bias", w.rows);
  float* y = f32_arg(info[4], fn, "out", count_of(info.Env(), fn, M, w.rows));
  if (M > 0 && w.rows > 0) {
    const KernelTable& k = kernels();
    const int planes = kPlanes[g_precision.load(std::memory_order_relaxed)][w.ffn ? 1 : 0];
    if (!(planes && k.matmul_q8act(x, M, w, bias, y, planes))) k.matmul(x, M, w, bias, y);
  }
  return info.Env().Undefined();
}

Napi::Value SetMatmulPrecision(const Napi::CallbackInfo& info) {
  const std::string mode = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : std::string();
  for (int p = kExact; p <= kMixed; p++)
    if (mode == kPrecisionNames[p]) {
      g_precision.store(p);
      return Napi::String::New(info.Env(), mode);
    }
  throw_type(info.Env(), "setMatmulPrecision: mode must be \"exact\", \"fast\", \"int8\" or \"mixed\"");
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

}  // namespace

void RegisterMatmul(Napi::Env env, Napi::Object exports) {
  exports.Set("matmul", Napi::Function::New(env, Matmul, "matmul"));
  exports.Set("gather", Napi::Function::New(env, Gather, "gather"));
  exports.Set("setMatmulPrecision", Napi::Function::New(env, SetMatmulPrecision, "setMatmulPrecision"));
  exports.Set("matmulPrecision", Napi::Function::New(env, MatmulPrecision, "matmulPrecision"));
}

}  // namespace mlx
