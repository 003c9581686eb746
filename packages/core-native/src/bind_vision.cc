// Vision bindings: dwconv2d and the MSFA resampling (avgPool2d, resizeNearest2d, resizeBilinear2d;
// kernels in isa/vision_impl.h). Every size is checked here, with the overflow-checked count helpers,
// so the kernels can trust their arguments.
#include <algorithm>
#include <string>

#include "args.h"
#include "bindings.h"

namespace mlx {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

// dwconv2d({ x [h, w, c], h, w, c, weight [kh*kw, c], kh, kw, strideH, strideW,
//            padTop, padBottom, padLeft, padRight, out [outH, outW, c] }) -> { outH, outW }
Napi::Value DwConv2d(const Napi::CallbackInfo& info) {
  const char* fn = "dwconv2d";
  Napi::Env env = info.Env();
  Napi::Object o = options_arg(info, fn);
  DwConv2dArgs a;
  a.h = int_arg(o.Get("h"), fn, "h", 1, int64_t(1) << 24);
  a.w = int_arg(o.Get("w"), fn, "w", 1, int64_t(1) << 24);
  a.c = int_arg(o.Get("c"), fn, "c", 1, int64_t(1) << 20);
  const ConvWindow win = conv_window_arg(o, fn, a.h, a.w);
  a.kh = win.kh, a.kw = win.kw, a.sh = win.sh, a.sw = win.sw, a.pad_top = win.pad_top, a.pad_left = win.pad_left;
  a.out_h = win.out_h, a.out_w = win.out_w;
  a.x = f32_arg(o.Get("x"), fn, "x", count_of(env, fn, a.h, a.w, a.c));
  a.weight = f32_arg(o.Get("weight"), fn, "weight", count_of(env, fn, a.kh, a.kw, a.c));
  a.out = f32_arg(o.Get("out"), fn, "out", count_of(env, fn, a.out_h, a.out_w, a.c));
  if (reinterpret_cast<const void*>(a.out) == reinterpret_cast<const void*>(a.x))
    throw_range(env, "dwconv2d: out must not alias x (each output reads a neighbourhood of inputs)");
  kernels().dwconv2d(a);
  Napi::Object r = Napi::Object::New(env);
  r.Set("outH", Napi::Number::New(env, double(a.out_h)));
  r.Set("outW", Napi::Number::New(env, double(a.out_w)));
  return r;
}

// The map shared by the resampling ops: { x [h, w, c], h, w, c } checked, and `out` [outH, outW, c]
// once the caller has set out_h / out_w; out must not alias x (outputs read other positions).
Resample2dArgs resample_input(const Napi::Object& o, const char* fn) {
  Resample2dArgs a;
  a.h = int_arg(o.Get("h"), fn, "h", 1, int64_t(1) << 24);
  a.w = int_arg(o.Get("w"), fn, "w", 1, int64_t(1) << 24);
  a.c = int_arg(o.Get("c"), fn, "c", 1, int64_t(1) << 20);
  a.x = f32_arg(o.Get("x"), fn, "x", checked_size(o.Env(), fn, "x", {a.h, a.w, a.c}));
  return a;
}

void resample_output(const Napi::Object& o, const char* fn, Resample2dArgs& a) {
  a.out = f32_arg(o.Get("out"), fn, "out", checked_size(o.Env(), fn, "out", {a.out_h, a.out_w, a.c}));
  if (reinterpret_cast<const void*>(a.out) == reinterpret_cast<const void*>(a.x))
    throw_range(o.Env(), std::string(fn) + ": out must not alias x");
}

Napi::Object out_size(Napi::Env env, const Resample2dArgs& a) {
  Napi::Object r = Napi::Object::New(env);
  r.Set("outH", Napi::Number::New(env, double(a.out_h)));
  r.Set("outW", Napi::Number::New(env, double(a.out_w)));
  return r;
}

// avgPool2d({ x [h, w, c], h, w, c, kh, kw, out [h/kh, w/kw, c] }) -> { outH, outW }: kernel = stride,
// no padding; kh and kw must divide h and w (the MSFA pools only exact multiples).
Napi::Value AvgPool2d(const Napi::CallbackInfo& info) {
  const char* fn = "avgPool2d";
  Napi::Env env = info.Env();
  Napi::Object o = options_arg(info, fn);
  Resample2dArgs a = resample_input(o, fn);
  a.kh = int(int_arg(o.Get("kh"), fn, "kh", 1, std::min<int64_t>(a.h, 1 << 16)));
  a.kw = int(int_arg(o.Get("kw"), fn, "kw", 1, std::min<int64_t>(a.w, 1 << 16)));
  if (a.h % a.kh != 0 || a.w % a.kw != 0)
    throw_range(env, "avgPool2d: the kernel [" + num(a.kh) + ", " + num(a.kw) + "] does not divide the map [" + num(a.h) + ", " +
                         num(a.w) + "]");
  a.out_h = a.h / a.kh;
  a.out_w = a.w / a.kw;
  resample_output(o, fn, a);
  kernels().avg_pool2d(a);
  return out_size(env, a);
}

// resizeNearest2d / resizeBilinear2d({ x [h, w, c], h, w, c, outH, outW, out [outH, outW, c] }) -> { outH, outW },
// outH and outW in [1, 2^24]; `kernel` is the dispatch-table entry of the mode.
Napi::Value Resize(const Napi::CallbackInfo& info, const char* fn, void (*KernelTable::*kernel)(const Resample2dArgs&)) {
  Napi::Object o = options_arg(info, fn);
  Resample2dArgs a = resample_input(o, fn);
  a.out_h = int_arg(o.Get("outH"), fn, "outH", 1, int64_t(1) << 24);
  a.out_w = int_arg(o.Get("outW"), fn, "outW", 1, int64_t(1) << 24);
  resample_output(o, fn, a);
  (kernels().*kernel)(a);
  return out_size(info.Env(), a);
}

Napi::Value ResizeNearest2d(const Napi::CallbackInfo& info) { return Resize(info, "resizeNearest2d", &KernelTable::resize_nearest2d); }
Napi::Value ResizeBilinear2d(const Napi::CallbackInfo& info) { return Resize(info, "resizeBilinear2d", &KernelTable::resize_bilinear2d); }

}  // namespace

void RegisterVision(Napi::Env env, Napi::Object exports) {
  exports.Set("dwconv2d", Napi::Function::New(env, DwConv2d, "dwconv2d"));
  exports.Set("avgPool2d", Napi::Function::New(env, AvgPool2d, "avgPool2d"));
  exports.Set("resizeNearest2d", Napi::Function::New(env, ResizeNearest2d, "resizeNearest2d"));
  exports.Set("resizeBilinear2d", Napi::Function::New(env, ResizeBilinear2d, "resizeBilinear2d"));
}

}  // namespace mlx
