// Module entry: CPU/ISA introspection and thread control, plus every binding group.
#include <napi.h>

#include "args.h"
#include "bindings.h"
#include "cpu.h"
#include "threadpool.h"

namespace mlx {
namespace {

Napi::Value CpuInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CpuFeatures f = detect_cpu();
  Napi::Object o = Napi::Object::New(env);
  Napi::Object feats = Napi::Object::New(env);
  feats.Set("avx2", f.avx2);
  feats.Set("fma", f.fma);
  feats.Set("f16c", f.f16c);
  feats.Set("avx512", f.avx512);
  feats.Set("avx512vnni", f.avx512_vnni);
  feats.Set("avxvnni", f.avx_vnni);
  feats.Set("amxInt8", f.amx_int8);
  feats.Set("neon", f.neon);
  feats.Set("neonDotprod", f.neon_dotprod);
  feats.Set("narrowIntMultiply", f.narrow_int_multiply);
  o.Set("features", feats);
  Napi::Array variants = Napi::Array::New(env);
  uint32_t i = 0;
  for (const KernelTable* t : available_variants()) variants.Set(i++, Napi::String::New(env, t->name));
  o.Set("variants", variants);
  o.Set("isa", Napi::String::New(env, kernels().name));
  o.Set("threads", Napi::Number::New(env, pool_threads()));
  o.Set("physicalCores", Napi::Number::New(env, physical_cores()));
#if defined(__x86_64__) || defined(_M_X64)
  o.Set("arch", "x64");
#elif defined(__aarch64__) || defined(_M_ARM64)
  o.Set("arch", "arm64");
#else
  o.Set("arch", "other");
#endif
  return o;
}

Napi::Value SetIsa(const Napi::CallbackInfo& info) {
  if (!info[0].IsString()) throw_type(info.Env(), "setIsa: name must be a string (scalar | avx2 | avx2vnni | avx512 | avx512vnni | avx512amx | neon | neon_dotprod)");
  try {
    select_variant(info[0].As<Napi::String>().Utf8Value());
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), std::string("setIsa: ") + e.what());
  }
  return Napi::String::New(info.Env(), kernels().name);
}

Napi::Value SetThreads(const Napi::CallbackInfo& info) {
  int n = int(int_arg(info[0], "setThreads", "n", 1, 1024));
  set_pool_threads(n);
  return Napi::Number::New(info.Env(), pool_threads());
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  // Resolve the variant now so a bad MLXCEL_ISA fails at load with a clear message.
  try {
    kernels();
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, std::string("MLXCEL_ISA: ") + e.what());
  }
  exports.Set("cpuInfo", Napi::Function::New(env, CpuInfo, "cpuInfo"));
  exports.Set("setIsa", Napi::Function::New(env, SetIsa, "setIsa"));
  exports.Set("setThreads", Napi::Function::New(env, SetThreads, "setThreads"));
  RegisterMemory(env, exports);
  RegisterMatmul(env, exports);
  RegisterElementwise(env, exports);
  RegisterAttention(env, exports);
  RegisterKv(env, exports);
  RegisterMisc(env, exports);
  RegisterAudio(env, exports);
  RegisterMoe(env, exports);
  RegisterVision(env, exports);
  return exports;
}

}  // namespace mlx

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return mlx::Init(env, exports); }

NODE_API_MODULE(mlxcel_core, InitModule)
