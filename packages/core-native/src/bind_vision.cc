// Vision bindings: dwconv2d (kernel in isa/vision_impl.h). Every size is checked here, with the
// overflow-checked count helpers, so the kernel can trust its arguments.
#include <string>

#include "args.h"
#include "bindings.h"

namespace mlx {
namespace {

// dwconv2d({ x [h, w, c], h, w, c, weight [kh*kw, c], kh, kw, strideH, strideW,
//            padTop, padBottom, padLeft, padRight, out [outH, outW, c] }) -> { outH, outW }
Napi::Value DwConv2d(const Napi::CallbackInfo& info) {
  const char* fn = "dwconv2d";
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw_type(env, "dwconv2d: expects one options object");
  Napi::Object o = info[0].As<Napi::Object>();
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

}  // namespace

void RegisterVision(Napi::Env env, Napi::Object exports) {
  exports.Set("dwconv2d", Napi::Function::New(env, DwConv2d, "dwconv2d"));
}

}  // namespace mlx
