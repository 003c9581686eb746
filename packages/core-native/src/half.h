// Scalar half-precision conversions (IEEE binary16 and bfloat16). Hot loops use the vector forms in
// isa/primitives.h; these serve bindings, quantization and tails. static: each translation unit keeps
// its own copy, so a kernel variant's ISA flags never reach another file's call.
#pragma once
#include <cstdint>
#include <cstring>
#include <cmath>

namespace mlx {

static inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, NaN stays NaN (as torch and MLX do).
static inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

static inline float f16_to_f32(uint16_t h) {
  uint32_t o = uint32_t(h & 0x7fffu) << 13;
  float f;
  std::memcpy(&f, &o, 4);
  f *= 0x1p112f;  // rebias exponent; also normalises subnormals
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((h & 0x7c00u) == 0x7c00u) u |= 0x7f800000u;  // inf / nan
  u |= uint32_t(h & 0x8000u) << 16;
  std::memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);      // nan
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);     // overflow -> inf (incl. rounding up)
  if (a < 0x38800000u) {                                      // subnormal or zero in f16
    float af;
    std::memcpy(&af, &a, 4);
    float r = af * 0x1p24f;                                    // units of 2^-24
    uint32_t m = uint32_t(std::nearbyint(r));                  // ties-to-even under default rounding
    return uint16_t(sign | m);
  }
  uint32_t mant_odd = (a >> 13) & 1u;
  a += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return uint16_t(sign | (a >> 13));
}

static inline float load_scalar(const uint8_t* base, int dtype, int64_t i) {
  if (dtype == 0) { float f; std::memcpy(&f, base + 4 * i, 4); return f; }
  uint16_t h;
  std::memcpy(&h, base + 2 * i, 2);
  return dtype == 1 ? f16_to_f32(h) : bf16_to_f32(h);
}

}  // namespace mlx
