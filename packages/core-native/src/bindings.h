// Each bind_*.cc registers its group of JS functions on the exports object.
#pragma once
#include <napi.h>

namespace mlx {
void RegisterMemory(Napi::Env env, Napi::Object exports);
void RegisterMatmul(Napi::Env env, Napi::Object exports);
void RegisterElementwise(Napi::Env env, Napi::Object exports);
void RegisterAttention(Napi::Env env, Napi::Object exports);
void RegisterKv(Napi::Env env, Napi::Object exports);
void RegisterMisc(Napi::Env env, Napi::Object exports);
void RegisterAudio(Napi::Env env, Napi::Object exports);
void RegisterMoe(Napi::Env env, Napi::Object exports);
void RegisterVision(Napi::Env env, Napi::Object exports);
}  // namespace mlx
