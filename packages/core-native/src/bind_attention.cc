// attention({...}): scaled dot-product attention over a KV buffer with GQA, masks and soft-capping.
#include "args.h"
#include "bindings.h"

namespace mlx {
namespace {

Napi::Value Attention(const Napi::CallbackInfo& info) {
  const char* fn = "attention";
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw_type(env, "attention: expects one options object");
  Napi::Object o = info[0].As<Napi::Object>();
  AttentionArgs a;
  a.n_q = int_arg(o.Get("nQ"), fn, "nQ", 0, int64_t(1) << 32);
  a.n_heads = int(int_arg(o.Get("nHeads"), fn, "nHeads", 1, 1 << 16));
  a.head_dim = int(int_arg(o.Get("headDim"), fn, "headDim", 1, 1 << 14));
  a.v_dim = is_nullish(o.Get("vDim")) ? a.head_dim : int(int_arg(o.Get("vDim"), fn, "vDim", 1, 1 << 14));
  a.n_kv = int_arg(o.Get("nKv"), fn, "nKv", 0, int64_t(1) << 32);
  a.n_kv_heads = int(int_arg(o.Get("nKvHeads"), fn, "nKvHeads", 1, 1 << 16));
  if (a.n_heads % a.n_kv_heads != 0)
    throw_range(env, "attention: nHeads " + std::to_string(a.n_heads) + " is not a multiple of nKvHeads " + std::to_string(a.n_kv_heads));
  a.kv_dtype = int(int_arg(o.Get("kvDtype"), fn, "kvDtype", 0, 2));
  a.q = f32_arg(o.Get("q"), fn, "q", a.n_q * a.n_heads * a.head_dim);
  a.q_pos = i32_arg(o.Get("qPos"), fn, "qPos", a.n_q);
  a.k_pos = i32_arg(o.Get("kPos"), fn, "kPos", a.n_kv);
  const size_t esz = a.kv_dtype == kF32 ? 4 : 2;
  Bytes k = bytes_arg(o.Get("k"), fn, "k");
  Bytes v = bytes_arg(o.Get("v"), fn, "v");
  const size_t kneed = size_t(a.n_kv) * a.n_kv_heads * a.head_dim * esz;
  const size_t vneed = size_t(a.n_kv) * a.n_kv_heads * a.v_dim * esz;
  if (k.size < kneed) throw_range(env, "attention: k has " + std::to_string(k.size) + " bytes, needs " + std::to_string(kneed));
  if (v.size < vneed) throw_range(env, "attention: v has " + std::to_string(v.size) + " bytes, needs " + std::to_string(vneed));
  a.k = k.data;
  a.v = v.data;
  a.scale = float(num_arg(o.Get("scale"), fn, "scale"));
  a.softcap = is_nullish(o.Get("softcap")) ? 0.f : float(num_arg(o.Get("softcap"), fn, "softcap"));
  if (a.softcap < 0.f) throw_range(env, "attention: softcap must be >= 0");
  a.causal = is_nullish(o.Get("causal")) ? true : bool_arg(o.Get("causal"), fn, "causal");
  a.window = is_nullish(o.Get("window")) ? 0 : int_arg(o.Get("window"), fn, "window", 0, int64_t(1) << 40);
  if (!is_nullish(o.Get("mask"))) {
    a.mask_heads = is_nullish(o.Get("maskHeads")) ? 1 : int(int_arg(o.Get("maskHeads"), fn, "maskHeads", 1, 1 << 16));
    if (a.mask_heads != 1 && a.mask_heads != a.n_heads)
      throw_range(env, "attention: maskHeads must be 1 or nHeads (" + std::to_string(a.n_heads) + ")");
    Bytes m = bytes_arg(o.Get("mask"), fn, "mask");
    const size_t mneed = size_t(a.mask_heads) * a.n_q * a.n_kv;
    if (m.size < mneed) throw_range(env, "attention: mask has " + std::to_string(m.size) + " bytes, needs " + std::to_string(mneed));
    a.mask = m.data;
  }
  a.out = f32_arg(o.Get("out"), fn, "out", a.n_q * a.n_heads * a.v_dim);
  if (a.n_q > 0) kernels().attention(a);
  return env.Undefined();
}

}  // namespace

void RegisterAttention(Napi::Env env, Napi::Object exports) {
  exports.Set("attention", Napi::Function::New(env, Attention, "attention"));
}

}  // namespace mlx
