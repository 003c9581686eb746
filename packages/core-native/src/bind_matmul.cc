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

// Activation planes of quantized matmuls: 0 exact, 2 ("fast", 16-bit) or 1 ("int8", 8-bit); the second
// for weights marked ffn. exact (0, 0), fast (2, 2), int8 (1, 1), mixed (2, 1).
std::atomic<int> g_act_planes{0};
std::atomic<int> g_act_planes_ffn{0};

Napi::Value Matmul(const Napi::CallbackInfo& info) {
  const char* fn = "matmul";
  int64_t M = int_arg(info[1], fn, "M", 0, int64_t(1) << 32);
  WeightRef w = weight_arg(info[2], fn, "weight");
  const float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, M, w.cols));
  const float* bias = is_nullish(info[3]) ? nullptr : f32_arg(info[3], fn, "bias", w.rows);
  float* y = f32_arg(info[4], fn, "out", count_of(info.Env(), fn, M, w.rows));
  if (M > 0 && w.rows > 0) {
    const KernelTable& k = kernels();
    const int planes = (w.ffn ? g_act_planes_ffn : g_act_planes).load(std::memory_order_relaxed);
    if (!(planes && k.matmul_q8act(x, M, w, bias, y, planes))) k.matmul(x, M, w, bias, y);
  }
  return info.Env().Undefined();
}

Napi::Value SetMatmulPrecision(const Napi::CallbackInfo& info) {
  const std::string mode = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : std::string();
  if (mode != "exact" && mode != "fast" && mode != "int8" && mode != "mixed")
    throw_type(info.Env(), "setMatmulPrecision: mode must be \"exact\", \"fast\", \"int8\" or \"mixed\"");
  g_act_planes.store(mode == "fast" || mode == "mixed" ? 2 : mode == "int8" ? 1 : 0);
  g_act_planes_ffn.store(mode == "fast" ? 2 : mode == "int8" || mode == "mixed" ? 1 : 0);
  return Napi::String::New(info.Env(), mode);
}

Napi::Value MatmulPrecision(const Napi::CallbackInfo& info) {
  const int planes = g_act_planes.load(), ffn = g_act_planes_ffn.load();
  const char* mode = planes == 2 ? (ffn == 1 ? "mixed" : "fast") : planes == 1 ? "int8" : "exact";
  return Napi::String::New(info.Env(), mode);
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
