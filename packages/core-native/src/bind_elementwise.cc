// Norms, softmax, unary/binary elementwise ops, affine, stream mixes, the logit soft-cap and RoPE.
#include <cmath>
#include <cstdio>

#include "args.h"
#include "bindings.h"

namespace mlx {
namespace {

int64_t length_of(const Napi::Value& v, const char* fn, const char* name) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    throw_type(v.Env(), std::string(fn) + ": " + name + " must be a Float32Array");
  return int64_t(v.As<Napi::TypedArray>().ElementLength());
}

// A norm's epsilon: finite and >= 0. A negative eps can make mean(x^2) + eps negative (NaN from the
// square root), NaN/Infinity poison every row; 0 is allowed (some references normalise without one).
float eps_arg(const Napi::Value& v, const char* fn) {
  const double eps = num_arg(v, fn, "eps");
  if (!(eps >= 0.0 && std::isfinite(eps)))
    throw_range(v.Env(), std::string(fn) + ": eps must be a finite number >= 0, got " + std::to_string(eps));
  return float(eps);
}

// rmsNorm(x, rows, dim, weight|null, eps, plusOne, out)
Napi::Value RmsNorm(const Napi::CallbackInfo& info) {
  const char* fn = "rmsNorm";
  int64_t rows = int_arg(info[1], fn, "rows", 0, int64_t(1) << 40);
  int64_t dim = int_arg(info[2], fn, "dim", 1, int64_t(1) << 30);
  const float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, rows, dim));
  const float* w = is_nullish(info[3]) ? nullptr : f32_arg(info[3], fn, "weight", dim);
  float eps = eps_arg(info[4], fn);
  bool plus_one = bool_arg(info[5], fn, "plusOne");
  float* out = f32_arg(info[6], fn, "out", count_of(info.Env(), fn, rows, dim));
  kernels().rms_norm(x, rows, dim, w, eps, plus_one, out);
  return info.Env().Undefined();
}

// layerNorm(x, rows, dim, weight|null, bias|null, eps, out)
Napi::Value LayerNorm(const Napi::CallbackInfo& info) {
  const char* fn = "layerNorm";
  int64_t rows = int_arg(info[1], fn, "rows", 0, int64_t(1) << 40);
  int64_t dim = int_arg(info[2], fn, "dim", 1, int64_t(1) << 30);
  const float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, rows, dim));
  const float* w = is_nullish(info[3]) ? nullptr : f32_arg(info[3], fn, "weight", dim);
  const float* b = is_nullish(info[4]) ? nullptr : f32_arg(info[4], fn, "bias", dim);
  float eps = eps_arg(info[5], fn);
  float* out = f32_arg(info[6], fn, "out", count_of(info.Env(), fn, rows, dim));
  kernels().layer_norm(x, rows, dim, w, b, eps, out);
  return info.Env().Undefined();
}

// softmax(x, rows, dim, out)
Napi::Value Softmax(const Napi::CallbackInfo& info) {
  const char* fn = "softmax";
  int64_t rows = int_arg(info[1], fn, "rows", 0, int64_t(1) << 40);
  int64_t dim = int_arg(info[2], fn, "dim", 1, int64_t(1) << 32);
  const float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, rows, dim));
  float* out = f32_arg(info[3], fn, "out", count_of(info.Env(), fn, rows, dim));
  kernels().softmax(x, rows, dim, out);
  return info.Env().Undefined();
}

// logSoftmax(x, out) -> { max, argmax, firstNaN }: one row; out may be x (in place).
Napi::Value LogSoftmax(const Napi::CallbackInfo& info) {
  const char* fn = "logSoftmax";
  const int64_t n = length_of(info[0], fn, "x");
  if (n == 0) throw_range(info.Env(), "logSoftmax: x must not be empty");
  const float* x = f32_arg(info[0], fn, "x", n);
  if (length_of(info[1], fn, "out") != n)
    throw_range(info.Env(), "logSoftmax: out must have x's length (" + std::to_string(n) + ")");
  float* out = f32_arg(info[1], fn, "out", n);
  float mx = 0.f;
  int64_t arg = -1, nan_at = n;
  kernels().log_softmax_row(x, n, out, &mx, &arg, &nan_at);
  Napi::Object r = Napi::Object::New(info.Env());
  r.Set("max", Napi::Number::New(info.Env(), mx));
  r.Set("argmax", Napi::Number::New(info.Env(), double(arg)));
  r.Set("firstNaN", Napi::Number::New(info.Env(), nan_at < n ? double(nan_at) : -1.0));
  return r;
}

// unary(op, x, out)
Napi::Value Unary(const Napi::CallbackInfo& info) {
  const char* fn = "unary";
  int op = int(int_arg(info[0], fn, "op", 0, kSqrt));
  int64_t n = length_of(info[1], fn, "x");
  const float* x = f32_arg(info[1], fn, "x", n);
  float* out = f32_arg(info[2], fn, "out", n);
  kernels().unary(op, x, n, out);
  return info.Env().Undefined();
}

// binary(op, a, b, out): b's length must divide a's (broadcast over leading axes).
Napi::Value Binary(const Napi::CallbackInfo& info) {
  const char* fn = "binary";
  int op = int(int_arg(info[0], fn, "op", 0, kMax));
  int64_t n = length_of(info[1], fn, "a");
  int64_t nb = length_of(info[2], fn, "b");
  if (nb == 0 ? n != 0 : n % nb != 0)
    throw_range(info.Env(), "binary: b has " + std::to_string(nb) + " elements, which does not divide a's " + std::to_string(n));
  const float* a = f32_arg(info[1], fn, "a", n);
  const float* b = f32_arg(info[2], fn, "b", nb);
  float* out = f32_arg(info[3], fn, "out", n);
  if (n) kernels().binary(op, a, n, b, nb, out);
  return info.Env().Undefined();
}

// affine(x, s, t, out): out = x * s + t
Napi::Value Affine(const Napi::CallbackInfo& info) {
  const char* fn = "affine";
  int64_t n = length_of(info[0], fn, "x");
  const float* x = f32_arg(info[0], fn, "x", n);
  float s = float(num_arg(info[1], fn, "s"));  // any value: affine is a plain arithmetic op
  float t = float(num_arg(info[2], fn, "t"));
  float* out = f32_arg(info[3], fn, "out", n);
  kernels().affine(x, n, s, t, out);
  return info.Env().Undefined();
}

// linearCombine(inputs: Float32Array[], coefs, out): out = sum_j coefs[j] * inputs[j] (element-wise;
// out may be one of the inputs). Every input holds at least out.length floats.
Napi::Value LinearCombine(const Napi::CallbackInfo& info) {
  const char* fn = "linearCombine";
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw_type(env, "linearCombine: inputs must be an array of Float32Array");
  Napi::Array arr = info[0].As<Napi::Array>();
  const uint32_t k = arr.Length();
  if (k < 1 || k > uint32_t(kMaxLinComb))
    throw_range(env, "linearCombine: inputs has " + std::to_string(k) + " arrays, needs 1.." + std::to_string(kMaxLinComb));
  int64_t n = length_of(info[2], fn, "out");
  float* out = f32_arg(info[2], fn, "out", n);
  const float* c = f32_arg(info[1], fn, "coefs", k);
  const float* xs[kMaxLinComb];
  char name[24];  // "inputs[j]" for error messages; a stack buffer: this runs every decode step
  for (uint32_t j = 0; j < k; j++) {
    std::snprintf(name, sizeof name, "inputs[%u]", j);
    xs[j] = f32_arg(arr.Get(j), fn, name, n);
  }
  kernels().lincomb(xs, c, int(k), n, out);
  return env.Undefined();
}

// mixStreams(inputs: Float32Array[J], coefs, outputs: Float32Array[I], rows, width):
// outputs[i][t, :] = sum_j coefs[t, i, j] * inputs[j][t, :] over rows t of `width` floats; coefs
// [rows, I, J]. Outputs may be inputs (each element is read from every input before it is written).
Napi::Value MixStreams(const Napi::CallbackInfo& info) {
  const char* fn = "mixStreams";
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw_type(env, "mixStreams: inputs must be an array of Float32Array");
  if (!info[2].IsArray()) throw_type(env, "mixStreams: outputs must be an array of Float32Array");
  Napi::Array ins = info[0].As<Napi::Array>(), outs = info[2].As<Napi::Array>();
  const uint32_t J = ins.Length(), I = outs.Length();
  if (J < 1 || J > uint32_t(kMaxMix))
    throw_range(env, "mixStreams: inputs has " + std::to_string(J) + " arrays, needs 1.." + std::to_string(kMaxMix));
  if (I < 1 || I > uint32_t(kMaxMix))
    throw_range(env, "mixStreams: outputs has " + std::to_string(I) + " arrays, needs 1.." + std::to_string(kMaxMix));
  const int64_t rows = int_arg(info[3], fn, "rows", 0, int64_t(1) << 40);
  const int64_t width = int_arg(info[4], fn, "width", 1, int64_t(1) << 30);
  const int64_t n = count_of(env, fn, rows, width);
  const float* c = f32_arg(info[1], fn, "coefs", count_of(env, fn, rows, I, J));
  const float* xs[kMaxMix];
  float* ys[kMaxMix];
  char name[24];
  for (uint32_t j = 0; j < J; j++) {
    std::snprintf(name, sizeof name, "inputs[%u]", j);
    xs[j] = f32_arg(ins.Get(j), fn, name, n);
  }
  for (uint32_t i = 0; i < I; i++) {
    std::snprintf(name, sizeof name, "outputs[%u]", i);
    ys[i] = f32_arg(outs.Get(i), fn, name, n);
  }
  if (rows > 0) kernels().mix_streams(xs, int(J), c, ys, int(I), rows, width);
  return env.Undefined();
}

// softcapCheck(x, cap, out) -> index of the first non-finite element of x, or -1:
// out = cap * tanh(x / cap) (cap 0: a copy), non-finite elements copied unchanged. out may be x.
Napi::Value SoftcapCheck(const Napi::CallbackInfo& info) {
  const char* fn = "softcapCheck";
  const int64_t n = length_of(info[0], fn, "x");
  const float* x = f32_arg(info[0], fn, "x", n);
  const double cap = num_arg(info[1], fn, "cap");
  if (!(cap >= 0.0 && std::isfinite(cap)))
    throw_range(info.Env(), "softcapCheck: cap must be a finite number >= 0 (0 = no soft-cap), got " + std::to_string(cap));
  float* out = f32_arg(info[2], fn, "out", n);
  const int64_t bad = n ? kernels().softcap_check(x, n, float(cap), out) : -1;
  return Napi::Number::New(info.Env(), double(bad));
}

// gatedAct(x, rows, half, act, out): x [rows, 2*half] = [gate | up] -> out [rows, half] = act(gate) * up,
// act = UnaryOp.SILU or UnaryOp.GELU_TANH. out must not overlap x.
Napi::Value GatedAct(const Napi::CallbackInfo& info) {
  const char* fn = "gatedAct";
  const int64_t rows = int_arg(info[1], fn, "rows", 0, int64_t(1) << 40);
  const int64_t half = int_arg(info[2], fn, "half", 1, int64_t(1) << 30);
  const int act = int(int_arg(info[3], fn, "act", 0, kSqrt));
  if (act != kSilu && act != kGeluTanh)
    throw_range(info.Env(), "gatedAct: act must be UnaryOp.SILU or UnaryOp.GELU_TANH, got " + std::to_string(act));
  const float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, rows, 2, half));
  float* out = f32_arg(info[4], fn, "out", count_of(info.Env(), fn, rows, half));
  const Bytes xb = bytes_arg(info[0], fn, "x"), ob = bytes_arg(info[4], fn, "out");
  if (rows && ob.data < xb.data + xb.size && xb.data < ob.data + ob.size)
    throw_range(info.Env(), "gatedAct: out overlaps x (write the result to a separate array)");
  if (rows) kernels().gated_act(x, rows, half, act, out);
  return info.Env().Undefined();
}

// gaussianTopK(x, rows, dim, z): in place, x <- max(x - (mean + std * z), 0) per row (population std).
Napi::Value GaussianTopK(const Napi::CallbackInfo& info) {
  const char* fn = "gaussianTopK";
  const int64_t rows = int_arg(info[1], fn, "rows", 0, int64_t(1) << 40);
  const int64_t dim = int_arg(info[2], fn, "dim", 1, int64_t(1) << 30);
  float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, rows, dim));
  const double z = num_arg(info[3], fn, "z");
  if (!std::isfinite(z)) throw_range(info.Env(), "gaussianTopK: z must be a finite number, got " + std::to_string(z));
  if (rows) kernels().gaussian_topk(x, rows, dim, z);
  return info.Env().Undefined();
}

// rope(x, nTok, nHeads, headDim, positions, cosTab, sinTab, rotDim, interleaved) — in place on x.
Napi::Value Rope(const Napi::CallbackInfo& info) {
  const char* fn = "rope";
  int64_t n_tok = int_arg(info[1], fn, "nTok", 0, int64_t(1) << 32);
  int64_t n_heads = int_arg(info[2], fn, "nHeads", 1, 1 << 16);
  int64_t head_dim = int_arg(info[3], fn, "headDim", 2, 1 << 16);
  float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, n_tok, n_heads, head_dim));
  const int32_t* pos = i32_arg(info[4], fn, "positions", n_tok);
  int64_t rot = int_arg(info[7], fn, "rotDim", 0, head_dim);
  if (rot % 2) throw_range(info.Env(), "rope: rotDim must be even, got " + std::to_string(rot));
  int64_t half = rot / 2;
  int64_t tab_len = length_of(info[5], fn, "cosTab");
  if (length_of(info[6], fn, "sinTab") != tab_len) throw_range(info.Env(), "rope: cosTab and sinTab differ in length");
  if (half > 0 && tab_len % half) throw_range(info.Env(), "rope: table length is not a multiple of rotDim/2");
  int64_t rows = half ? tab_len / half : 0;
  for (int64_t t = 0; t < n_tok; t++)
    if (pos[t] < 0 || pos[t] >= rows)
      throw_range(info.Env(), "rope: positions[" + std::to_string(t) + "] = " + std::to_string(pos[t]) +
                                  " is outside the table's " + std::to_string(rows) + " rows");
  const float* c = f32_arg(info[5], fn, "cosTab", tab_len);
  const float* s = f32_arg(info[6], fn, "sinTab", tab_len);
  bool inter = bool_arg(info[8], fn, "interleaved");
  if (half) kernels().rope(x, n_tok, n_heads, head_dim, pos, c, s, rot, inter);
  return info.Env().Undefined();
}

}  // namespace

void RegisterElementwise(Napi::Env env, Napi::Object exports) {
  exports.Set("rmsNorm", Napi::Function::New(env, RmsNorm, "rmsNorm"));
  exports.Set("layerNorm", Napi::Function::New(env, LayerNorm, "layerNorm"));
  exports.Set("softmax", Napi::Function::New(env, Softmax, "softmax"));
  exports.Set("logSoftmax", Napi::Function::New(env, LogSoftmax, "logSoftmax"));
  exports.Set("unary", Napi::Function::New(env, Unary, "unary"));
  exports.Set("binary", Napi::Function::New(env, Binary, "binary"));
  exports.Set("affine", Napi::Function::New(env, Affine, "affine"));
  exports.Set("linearCombine", Napi::Function::New(env, LinearCombine, "linearCombine"));
  exports.Set("rope", Napi::Function::New(env, Rope, "rope"));
  exports.Set("mixStreams", Napi::Function::New(env, MixStreams, "mixStreams"));
  exports.Set("softcapCheck", Napi::Function::New(env, SoftcapCheck, "softcapCheck"));
  exports.Set("gatedAct", Napi::Function::New(env, GatedAct, "gatedAct"));
  exports.Set("gaussianTopK", Napi::Function::New(env, GaussianTopK, "gaussianTopK"));
}

}  // namespace mlx
