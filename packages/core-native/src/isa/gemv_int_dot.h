// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

// ---- Integer-dot GEMV for 4-/8-bit weights: AVX-512 VNNI (4- and 8-bit) and AVX2 (4-bit) ----
// Shared by both: the exact 3-piece split of x described below (kPlaneT, plane_digits). Each variant
// then has its own plane writer (the plane layout follows its vector width) and dot kernel.
#if (defined(__AVX512VNNI__) && MLX_VL == 16) || (defined(__AVX2__) && MLX_VL == 8) || \
    (defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4)
// Per quantization group g, x is written as three signed 8-bit digit planes:
//   x[c] ~= sx[g] * t[c],  t = d2*65536 + d1*256 + d0,  |t| <= 8355711,  sx[g] = max_g |x| / 8355711,
// so each x is represented to 23 bits relative to its group's largest element (error <= 2^-24 max_g|x|,
// one f32 rounding of that element): an f32-exact split of x, not an 8-bit activation quantization.
// sum q*x over a chunk of codes is then three u8 codes x s8 digits -> i32 dot products per code vector
// (vpdpbusd with VNNI; vpmaddubsw + vpmaddwd with AVX2), combined in i32 and converted to f32 once per
// chunk, replacing the per-code u8 -> f32 conversions that bound the f32 path. The result matches the
// f32 path to f32 rounding.
constexpr int kPlaneT = 8355711;  // 127 * 65536 + 127 * 256 + 127

// t (|t| <= kPlaneT, one per i32 lane) -> digits with t = d2 * 65536 + d1 * 256 + d0, each in [-128, 127].
static inline void plane_digits(vi t, vi& d2, vi& d1, vi& d0) {
  d0 = ((t + 128) & 255) - 128;
  const vi t1 = (t - d0) >> 8;
  d1 = ((t1 + 128) & 255) - 128;
  d2 = (t1 - d1) >> 8;
}
#endif  // integer-dot GEMV (shared part)
