// Audio bindings: logMel, conv2d, dwconv1dCausal, localAttention, clamp, glu (kernels in isa/audio_impl.h).
// Every size is checked here so the kernels can trust their arguments.
#include <cmath>
#include <string>

#include "args.h"
#include "bindings.h"

namespace mlx {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

int64_t f32_length(const Napi::Value& v, const char* fn, const char* name) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    throw_type(v.Env(), std::string(fn) + ": " + name + " must be a Float32Array");
  return int64_t(v.As<Napi::TypedArray>().ElementLength());
}

// logMel({ signal, nFrames, frameLength, hop, fftSize, preemphasis?, preemphasisHtk?, window,
//          melFilters: Float64Array [fftSize/2+1, nMel], nMel, floorMode: 'add' | 'max', melFloor, out })
Napi::Value LogMel(const Napi::CallbackInfo& info) {
  const char* fn = "logMel";
  Napi::Env env = info.Env();
  Napi::Object o = options_arg(info, fn);
  LogMelArgs a;
  a.n_frames = int_arg(o.Get("nFrames"), fn, "nFrames", 0, int64_t(1) << 31);
  a.frame_len = int(int_arg(o.Get("frameLength"), fn, "frameLength", 1, 1 << 16));
  a.hop = int(int_arg(o.Get("hop"), fn, "hop", 1, 1 << 16));
  a.fft_size = int(int_arg(o.Get("fftSize"), fn, "fftSize", 2, 1 << 20));
  if ((a.fft_size & (a.fft_size - 1)) != 0) throw_range(env, "logMel: fftSize " + num(a.fft_size) + " is not a power of two");
  if (a.fft_size < a.frame_len)
    throw_range(env, "logMel: fftSize " + num(a.fft_size) + " is smaller than frameLength " + num(a.frame_len));
  a.preemphasis = is_nullish(o.Get("preemphasis")) ? 0.0 : num_arg(o.Get("preemphasis"), fn, "preemphasis");
  if (!(a.preemphasis >= 0.0 && a.preemphasis < 1.0)) throw_range(env, "logMel: preemphasis must be in [0, 1)");
  a.preemphasis_htk = is_nullish(o.Get("preemphasisHtk")) ? true : bool_arg(o.Get("preemphasisHtk"), fn, "preemphasisHtk");
  a.n_mel = int(int_arg(o.Get("nMel"), fn, "nMel", 1, 1 << 16));
  // Every frame reads frame_len + 1 samples (the references unfold FL + 1 and the non-HTK
  // preemphasis uses the last one), so the signal must cover the last frame's extra sample.
  const int64_t need = a.n_frames == 0 ? 0 : (a.n_frames - 1) * a.hop + a.frame_len + 1;
  const int64_t have = f32_length(o.Get("signal"), fn, "signal");
  if (have < need)
    throw_range(env, "logMel: signal has " + num(have) + " samples, " + num(a.n_frames) + " frames need " + num(need));
  a.signal = f32_arg(o.Get("signal"), fn, "signal", need);
  a.window = f32_arg(o.Get("window"), fn, "window", a.frame_len);
  Napi::Value mf = o.Get("melFilters");
  if (!mf.IsTypedArray() || mf.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
    throw_type(env, "logMel: melFilters must be a Float64Array [fftSize/2 + 1, nMel]");
  const int64_t nb = a.fft_size / 2 + 1;
  if (int64_t(mf.As<Napi::Float64Array>().ElementLength()) != nb * a.n_mel)
    throw_range(env, "logMel: melFilters has " + num(int64_t(mf.As<Napi::Float64Array>().ElementLength())) +
                         " values, expected " + num(nb) + " x " + num(a.n_mel));
  a.mel_filters = mf.As<Napi::Float64Array>().Data();
  Napi::Value mode = o.Get("floorMode");
  if (!mode.IsString()) throw_type(env, "logMel: floorMode must be 'add' or 'max'");
  const std::string m = mode.As<Napi::String>().Utf8Value();
  if (m == "add") a.floor_mode = 0;
  else if (m == "max") a.floor_mode = 1;
  else throw_range(env, "logMel: floorMode must be 'add' or 'max', got '" + m + "'");
  a.mel_floor = num_arg(o.Get("melFloor"), fn, "melFloor");
  if (!(a.mel_floor > 0.0 && std::isfinite(a.mel_floor))) throw_range(env, "logMel: melFloor must be a finite number > 0 (it keeps log away from 0)");
  a.out = f32_arg(o.Get("out"), fn, "out", checked_size(env, fn, "out", {a.n_frames, a.n_mel}));
  if (a.n_frames > 0) kernels().log_mel(a);
  return env.Undefined();
}

// conv2d({ x [h, w, cin], h, w, cin, weight [cout, kh*kw*cin], cout, kh, kw, strideH, strideW,
//          padTop, padBottom, padLeft, padRight, out }) -> { outH, outW }
Napi::Value Conv2d(const Napi::CallbackInfo& info) {
  const char* fn = "conv2d";
  Napi::Env env = info.Env();
  Napi::Object o = options_arg(info, fn);
  Conv2dArgs a;
  a.h = int_arg(o.Get("h"), fn, "h", 0, int64_t(1) << 31);
  a.w = int_arg(o.Get("w"), fn, "w", 1, int64_t(1) << 31);
  a.cin = int(int_arg(o.Get("cin"), fn, "cin", 1, 1 << 16));
  a.cout = int(int_arg(o.Get("cout"), fn, "cout", 1, 1 << 16));
  const ConvWindow win = conv_window_arg(o, fn, a.h, a.w);
  a.kh = win.kh, a.kw = win.kw, a.sh = win.sh, a.sw = win.sw, a.pad_top = win.pad_top, a.pad_left = win.pad_left;
  a.out_h = win.out_h, a.out_w = win.out_w;
  // h and w may each be up to 2^31, so h * w * cin can wrap int64: every product is checked.
  a.x = f32_arg(o.Get("x"), fn, "x", checked_size(env, fn, "x", {a.h, a.w, a.cin}));
  a.weight = f32_arg(o.Get("weight"), fn, "weight", checked_size(env, fn, "weight", {a.cout, a.kh, a.kw, a.cin}));
  a.out = f32_arg(o.Get("out"), fn, "out", checked_size(env, fn, "out", {a.out_h, a.out_w, a.cout}));
  // The kernel unfolds at least one output row (outW x kh x kw x cin floats) into scratch per thread;
  // bound it so a wide, thin input with a large kernel cannot ask for gigabytes of scratch.
  const int64_t unfolded = checked_size(env, fn, "unfolded row", {a.out_w, a.kh, a.kw, a.cin});
  if (unfolded > (int64_t(1) << 28))
    throw_range(env, "conv2d: one unfolded output row needs " + num(unfolded) + " floats (outW " + num(a.out_w) +
                         " x kh x kw x cin), over the 2^28 scratch limit");
  if (a.out_h > 0) kernels().conv2d(a);
  Napi::Object r = Napi::Object::New(env);
  r.Set("outH", Napi::Number::New(env, double(a.out_h)));
  r.Set("outW", Napi::Number::New(env, double(a.out_w)));
  return r;
}

// dwconv1dCausal(x [T, C], T, C, w [C, K], K, out [T, C])
Napi::Value DwConv1dCausal(const Napi::CallbackInfo& info) {
  const char* fn = "dwconv1dCausal";
  const int64_t T = int_arg(info[1], fn, "T", 0, int64_t(1) << 31);
  const int64_t C = int_arg(info[2], fn, "C", 1, int64_t(1) << 24);
  const int K = int(int_arg(info[4], fn, "K", 1, 1024));
  const float* x = f32_arg(info[0], fn, "x", checked_size(info.Env(), fn, "x", {T, C}));
  const float* w = f32_arg(info[3], fn, "w", checked_size(info.Env(), fn, "w", {C, K}));
  float* out = f32_arg(info[5], fn, "out", checked_size(info.Env(), fn, "out", {T, C}));
  if (out == x) throw_range(info.Env(), "dwconv1dCausal: out must not alias x (each output reads earlier rows)");
  if (T > 0) kernels().dwconv1d_causal(x, T, C, w, K, out);
  return info.Env().Undefined();
}

// localAttention({ q, k, v [n, nHeads, headDim], n, nHeads, headDim, rel [nRel, nHeads, headDim], nRel,
//                  relDist0, valid?: Uint8Array [n], maxPast, maxFuture, softcap?, out })
Napi::Value LocalAttention(const Napi::CallbackInfo& info) {
  const char* fn = "localAttention";
  Napi::Env env = info.Env();
  Napi::Object o = options_arg(info, fn);
  LocalAttentionArgs a;
  a.n = int_arg(o.Get("n"), fn, "n", 0, int64_t(1) << 31);
  a.n_heads = int(int_arg(o.Get("nHeads"), fn, "nHeads", 1, 1 << 12));
  a.head_dim = int(int_arg(o.Get("headDim"), fn, "headDim", 1, 1 << 14));
  a.n_rel = int(int_arg(o.Get("nRel"), fn, "nRel", 0, 1 << 16));
  a.rel_dist0 = int(int_arg(o.Get("relDist0"), fn, "relDist0", -(1 << 16), 1 << 16));
  a.max_past = int(int_arg(o.Get("maxPast"), fn, "maxPast", -1, 1 << 16));
  a.max_future = int(int_arg(o.Get("maxFuture"), fn, "maxFuture", -1, 1 << 16));
  if (a.max_past + a.max_future + 1 <= 0)
    throw_range(env, "localAttention: the window [-maxFuture, maxPast] = [" + num(-a.max_future) + ", " + num(a.max_past) +
                         "] admits no distance");
  const int64_t sz = checked_size(env, fn, "q", {a.n, a.n_heads, a.head_dim});
  a.q = f32_arg(o.Get("q"), fn, "q", sz);
  a.k = f32_arg(o.Get("k"), fn, "k", sz);
  a.v = f32_arg(o.Get("v"), fn, "v", sz);
  a.rel = a.n_rel == 0 ? nullptr : f32_arg(o.Get("rel"), fn, "rel", checked_size(env, fn, "rel", {a.n_rel, a.n_heads, a.head_dim}));
  if (!is_nullish(o.Get("valid"))) {
    Napi::Value vv = o.Get("valid");
    if (!vv.IsTypedArray() || vv.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      throw_type(env, "localAttention: valid must be a Uint8Array (1 = valid frame)");
    if (int64_t(vv.As<Napi::Uint8Array>().ElementLength()) < a.n)
      throw_range(env, "localAttention: valid has " + num(int64_t(vv.As<Napi::Uint8Array>().ElementLength())) +
                           " entries, needs " + num(a.n));
    a.valid = vv.As<Napi::Uint8Array>().Data();
  }
  a.softcap = is_nullish(o.Get("softcap")) ? 0.f : float(num_arg(o.Get("softcap"), fn, "softcap"));
  // 0 = no soft-cap; otherwise finite and > 0 (Infinity or NaN would turn every score into NaN).
  if (!(a.softcap >= 0.f && std::isfinite(a.softcap))) throw_range(env, "localAttention: softcap must be 0 (off) or a finite number > 0");
  a.out = f32_arg(o.Get("out"), fn, "out", sz);
  if (a.out == a.q || a.out == a.k || a.out == a.v) throw_range(env, "localAttention: out must not alias q, k or v");
  if (a.n > 0) kernels().local_attention(a);
  return env.Undefined();
}

// clamp(x, lo, hi, out)
Napi::Value Clamp(const Napi::CallbackInfo& info) {
  const char* fn = "clamp";
  const int64_t n = f32_length(info[0], fn, "x");
  const float* x = f32_arg(info[0], fn, "x", n);
  const double lo = num_arg(info[1], fn, "lo"), hi = num_arg(info[2], fn, "hi");
  if (std::isnan(lo) || std::isnan(hi)) throw_range(info.Env(), "clamp: lo and hi must be numbers, got NaN");
  if (!(lo <= hi)) throw_range(info.Env(), "clamp: lo " + std::to_string(lo) + " > hi " + std::to_string(hi));
  float* out = f32_arg(info[3], fn, "out", n);
  if (n > 0) kernels().clamp(x, n, float(lo), float(hi), out);
  return info.Env().Undefined();
}

// glu(x [rows, 2*half], rows, half, out [rows, half])
Napi::Value Glu(const Napi::CallbackInfo& info) {
  const char* fn = "glu";
  const int64_t rows = int_arg(info[1], fn, "rows", 0, int64_t(1) << 40);
  const int64_t half = int_arg(info[2], fn, "half", 1, int64_t(1) << 30);
  // rows up to 2^40 times 2 * half up to 2^31 overflows int64: checked products only.
  const float* x = f32_arg(info[0], fn, "x", checked_size(info.Env(), fn, "x", {rows, 2, half}));
  float* out = f32_arg(info[3], fn, "out", checked_size(info.Env(), fn, "out", {rows, half}));
  if (out == x && rows > 1) throw_range(info.Env(), "glu: out must not alias x");
  if (rows > 0) kernels().glu(x, rows, half, out);
  return info.Env().Undefined();
}

}  // namespace

void RegisterAudio(Napi::Env env, Napi::Object exports) {
  exports.Set("logMel", Napi::Function::New(env, LogMel, "logMel"));
  exports.Set("conv2d", Napi::Function::New(env, Conv2d, "conv2d"));
  exports.Set("dwconv1dCausal", Napi::Function::New(env, DwConv1dCausal, "dwconv1dCausal"));
  exports.Set("localAttention", Napi::Function::New(env, LocalAttention, "localAttention"));
  exports.Set("clamp", Napi::Function::New(env, Clamp, "clamp"));
  exports.Set("glu", Napi::Function::New(env, Glu, "glu"));
}

}  // namespace mlx
