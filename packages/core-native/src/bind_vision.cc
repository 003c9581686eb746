// Vision bindings: dwconv2d (kernel in isa/vision_impl.h). Every size is checked here, with the
// overflow-checked count helpers, so the kernel can trust its arguments.
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
  if (!info[0].IsObject()) throw_type(env, "dwconv2d: expects one options object");
  Napi::Object o = info[0].As<Napi::Object>();
  DwConv2dArgs a;
  a.h = int_arg(o.Get("h"), fn, "h", 1, int64_t(1) << 24);
  a.w = int_arg(o.Get("w"), fn, "w", 1, int64_t(1) << 24);
  a.c = int_arg(o.Get("c"), fn, "c", 1, int64_t(1) << 20);
  a.kh = int(int_arg(o.Get("kh"), fn, "kh", 1, 64));
  a.kw = int(int_arg(o.Get("kw"), fn, "kw", 1, 64));
  a.sh = int(int_arg(o.Get("strideH"), fn, "strideH", 1, 64));
  a.sw = int(int_arg(o.Get("strideW"), fn, "strideW", 1, 64));
  a.pad_top = int(int_arg(o.Get("padTop"), fn, "padTop", 0, 64));
  const int pb = int(int_arg(o.Get("padBottom"), fn, "padBottom", 0, 64));
  a.pad_left = int(int_arg(o.Get("padLeft"), fn, "padLeft", 0, 64));
  const int pr = int(int_arg(o.Get("padRight"), fn, "padRight", 0, 64));
  const int64_t hp = a.h + a.pad_top + pb, wp = a.w + a.pad_left + pr;
  if (hp < a.kh || wp < a.kw)
    throw_range(env, "dwconv2d: padded input [" + num(hp) + ", " + num(wp) + "] is smaller than the kernel [" + num(a.kh) +
                         ", " + num(a.kw) + "]");
  a.out_h = (hp - a.kh) / a.sh + 1;
  a.out_w = (wp - a.kw) / a.sw + 1;
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
