// Dtype conversion, MLX affine quantization, argmax/top-k and the bandwidth probe.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "args.h"
#include "bindings.h"
#include "half.h"
#include "threadpool.h"
#include "kernels.h"

namespace mlx {
namespace {

// toF32(src, srcDtype, count, out): src is f32/f16/bf16 bytes (any alignment).
Napi::Value ToF32(const Napi::CallbackInfo& info) {
  const char* fn = "toF32";
  Bytes src = bytes_arg(info[0], fn, "src");
  int dt = int(int_arg(info[1], fn, "srcDtype", 0, 2));
  int64_t n = int_arg(info[2], fn, "count", 0, int64_t(1) << 40);
  size_t need = size_t(n) * (dt == kF32 ? 4 : 2);
  if (src.size < need) throw_range(info.Env(), "toF32: src has " + std::to_string(src.size) + " bytes, needs " + std::to_string(need));
  float* out = f32_arg(info[3], fn, "out", n);
  parallel_for(n, 1 << 15, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) out[i] = load_scalar(src.data, dt, i);
  });
  return info.Env().Undefined();
}

// fromF32(src Float32Array, dstDtype 1|2, out Uint16Array)
Napi::Value FromF32(const Napi::CallbackInfo& info) {
  const char* fn = "fromF32";
  if (!info[0].IsTypedArray()) throw_type(info.Env(), "fromF32: src must be a Float32Array");
  int64_t n = int64_t(info[0].As<Napi::TypedArray>().ElementLength());
  const float* src = f32_arg(info[0], fn, "src", n);
  int dt = int(int_arg(info[1], fn, "dstDtype", 1, 2));
  Bytes out = bytes_arg(info[2], fn, "out");
  if (out.size < size_t(n) * 2) throw_range(info.Env(), "fromF32: out is too small");
  for (int64_t i = 0; i < n; i++) {
    uint16_t h = dt == kF16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
    std::memcpy(out.data + 2 * i, &h, 2);
  }
  return info.Env().Undefined();
}

// quantize(w, rows, cols, bits, group, outWords Uint32Array, outScales Float32Array, outBiases Float32Array)
// MLX affine quantizer (the larger-magnitude edge of each group is represented exactly).
Napi::Value Quantize(const Napi::CallbackInfo& info) {
  const char* fn = "quantize";
  Napi::Env env = info.Env();
  int64_t rows = int_arg(info[1], fn, "rows", 0, int64_t(1) << 40);
  int64_t cols = int_arg(info[2], fn, "cols", 1, int64_t(1) << 40);
  int bits = int(int_arg(info[3], fn, "bits", 2, 8));
  int group = int(int_arg(info[4], fn, "group", 32, 128));
  if (bits == 7) throw_range(env, "quantize: bits must be 2, 3, 4, 5, 6 or 8");
  if (group != 32 && group != 64 && group != 128) throw_range(env, "quantize: group must be 32, 64 or 128");
  if (cols % group) throw_range(env, "quantize: cols " + std::to_string(cols) + " is not a multiple of group " + std::to_string(group));
  const float* w = f32_arg(info[0], fn, "w", count_of(env, fn, rows, cols));
  Bytes words = bytes_arg(info[5], fn, "outWords");
  const int64_t row_words = cols * bits / 32;
  if (words.size < size_t(count_of(env, fn, rows, row_words, 4))) throw_range(env, "quantize: outWords is too small");
  const int64_t gpr = cols / group;
  float* scales = f32_arg(info[6], fn, "outScales", count_of(env, fn, rows, gpr));
  float* biases = f32_arg(info[7], fn, "outBiases", count_of(env, fn, rows, gpr));
  const float n_levels = float((1 << bits) - 1);
  std::memset(words.data, 0, size_t(rows * row_words * 4));
  parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      uint8_t* row = words.data + r * row_words * 4;
      for (int64_t g = 0; g < gpr; g++) {
        const float* x = w + r * cols + g * group;
        float mx = x[0], mn = x[0];
        for (int i = 1; i < group; i++) { mx = std::max(mx, x[i]); mn = std::min(mn, x[i]); }
        float s = std::max((mx - mn) / n_levels, 1e-7f);
        float edge;
        if (std::fabs(mn) > std::fabs(mx)) edge = mn;
        else { s = -s; edge = mx; }
        float q0 = std::nearbyint(edge / s);
        float bias = 0.f;
        if (q0 != 0.f) { s = edge / q0; bias = edge; }
        scales[r * gpr + g] = s;
        biases[r * gpr + g] = bias;
        for (int i = 0; i < group; i++) {
          float qf = std::nearbyint((x[i] - bias) / s);
          qf = std::min(std::max(qf, 0.f), n_levels);
          uint32_t q = uint32_t(qf);
          int64_t t = (g * group + i) * int64_t(bits);
          for (int b = 0; b < bits; b++, t++)
            if (q >> b & 1u) row[t >> 3] |= uint8_t(1u << (t & 7));
        }
      }
    }
  });
  return env.Undefined();
}

// argmax(x, rows, dim, out Int32Array)
Napi::Value Argmax(const Napi::CallbackInfo& info) {
  const char* fn = "argmax";
  int64_t rows = int_arg(info[1], fn, "rows", 0, int64_t(1) << 40);
  int64_t dim = int_arg(info[2], fn, "dim", 1, int64_t(1) << 40);
  const float* x = f32_arg(info[0], fn, "x", count_of(info.Env(), fn, rows, dim));
  int32_t* out = i32_arg(info[3], fn, "out", rows);
  for (int64_t r = 0; r < rows; r++) {
    const float* p = x + r * dim;
    // The first maximum wins; NaN never wins (a row of NaN gives 0).
    int64_t best = 0;
    while (best < dim && std::isnan(p[best])) best++;
    if (best == dim) best = 0;
    for (int64_t i = best + 1; i < dim; i++) if (p[i] > p[best]) best = i;
    out[r] = int32_t(best);
  }
  return info.Env().Undefined();
}

// topk(x, k, outIdx Int32Array, outVal Float32Array): the k largest of one row, descending.
Napi::Value TopK(const Napi::CallbackInfo& info) {
  const char* fn = "topk";
  if (!info[0].IsTypedArray()) throw_type(info.Env(), "topk: x must be a Float32Array");
  int64_t dim = int64_t(info[0].As<Napi::TypedArray>().ElementLength());
  const float* x = f32_arg(info[0], fn, "x", dim);
  int64_t k = int_arg(info[1], fn, "k", 1, dim);
  int32_t* oi = i32_arg(info[2], fn, "outIdx", k);
  float* ov = f32_arg(info[3], fn, "outVal", k);
  std::vector<int32_t> idx(static_cast<size_t>(dim), 0);
  std::iota(idx.begin(), idx.end(), 0);
  auto cmp = [&](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), cmp);
  for (int64_t i = 0; i < k; i++) { oi[i] = idx[size_t(i)]; ov[i] = x[idx[size_t(i)]]; }
  return info.Env().Undefined();
}

Napi::Value StreamSum(const Napi::CallbackInfo& info) {
  Bytes b = bytes_arg(info[0], "streamSum", "buffer");
  return Napi::Number::New(info.Env(), kernels().stream_sum(b.data, int64_t(b.size)));
}

}  // namespace

void RegisterMisc(Napi::Env env, Napi::Object exports) {
  exports.Set("toF32", Napi::Function::New(env, ToF32, "toF32"));
  exports.Set("fromF32", Napi::Function::New(env, FromF32, "fromF32"));
  exports.Set("quantize", Napi::Function::New(env, Quantize, "quantize"));
  exports.Set("argmax", Napi::Function::New(env, Argmax, "argmax"));
  exports.Set("topk", Napi::Function::New(env, TopK, "topk"));
  exports.Set("streamSum", Napi::Function::New(env, StreamSum, "streamSum"));
}

}  // namespace mlx
