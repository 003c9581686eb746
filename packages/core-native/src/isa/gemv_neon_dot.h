// ---- Arm NEON dot-product GEMV for 4- and 8-bit weights (the neon_dotprod variant) ----
// Included by kernels_impl.h inside the variant namespace, only when the variant is compiled with the
// Armv8.2 dot-product extension (isa_neon_dotprod.cc, -march=armv8.2-a+dotprod; cpu.cc selects it when
// the CPU reports it: Apple M1 and later, Neoverse N1/V1 and later, Cortex-A55/A76 and later).
//
// Same exact 3-piece split of x as the x86 integer-dot paths (kPlaneT, plane_digits in gemv_int_dot.h):
// per quantization group, x ~= sx * (d2 * 65536 + d1 * 256 + d0) with signed 8-bit digits, which
// represents x to 23 bits relative to the group's largest element (an f32-exact split, not an 8-bit
// activation quantization). SDOT (s8 x s8 -> s32, 4 products per lane) then replaces the per-code
// u8 -> f32 conversions that bound the f32 path.
//
// A 16-byte vector of packed codes holds 32 4-bit codes (or 16 8-bit codes), always inside one
// quantization group (group sizes are 32, 64 or 128), so a whole chunk shares one factor
// scale * sx: the three digit-plane partial sums are kept in i32 across the chunks of a group and
// combined in f32 once per group. Bounds: a 4-bit lane gains <= 8 * 15 * 128 = 15360 per chunk, at most
// 4 chunks per group of 128 -> 61440; an 8-bit lane (codes re-centred to [-128, 127], see below) gains
// <= 4 * 128 * 128 = 65536 per chunk, at most 8 chunks -> 524288. Both fit i32 with room to spare.
//
// 8-bit codes do not fit s8, so they are re-centred: q' = q - 128 (one XOR with 0x80), and
// sum q * x = sum q' * x + 128 * sum x, the second term folded into the bias term of the group
// (b + 128 * s) * sum x, using the exact f32 group sums of x that every quantized GEMV already has.
#if defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4
// <arm_neon.h> is included by the variant file, outside any namespace.

constexpr int kDotQ4Chunk = 32;  // codes per 16-byte vector, 4-bit
constexpr int kDotQ8Chunk = 16;  // codes per 16-byte vector, 8-bit

// Writes the digit planes of one x row (K a multiple of the group, group 32/64/128). Plane layout per
// chunk of CW codes: [d2 | d1 | d0], CW bytes each; for 4-bit each plane is [16 even-position elements |
// 16 odd-position elements], matching the low / high nibble vectors of the chunk. Returns false when x
// holds a non-finite value (the caller then uses the f32 path, which propagates it).
static bool neon_dot_prepare(const float* x, int64_t K, int G, int bits, int8_t* planes, float* sx) {
  const int64_t gpr = K / G;
  const int CW = bits == 4 ? kDotQ4Chunk : kDotQ8Chunk;
  for (int64_t g = 0; g < gpr; g++) {
    const float* xg = x + g * G;
    float32x4_t mx = vdupq_n_f32(0.f);
    uint32x4_t finite = vdupq_n_u32(~0u);
    for (int c = 0; c < G; c += 4) {
      const float32x4_t a = vabsq_f32(vld1q_f32(xg + c));
      finite = vandq_u32(finite, vcltq_f32(a, vdupq_n_f32(INFINITY)));  // false for inf and NaN
      mx = vmaxq_f32(mx, a);
    }
    if (vminvq_u32(finite) == 0) return false;
    const float m = vmaxvq_f32(mx);
    sx[g] = m / float(kPlaneT);
    const float32x4_t inv = vdupq_n_f32(m > 0.f ? float(kPlaneT) / m : 0.f);
    const int32x4_t tmax = vdupq_n_s32(kPlaneT), tmin = vdupq_n_s32(-kPlaneT);
    for (int c = 0; c < G; c += 8) {
      const int64_t e = g * G + c;  // element index of this 8-element block
      int32x4_t ta = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + e), inv));
      int32x4_t tb = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + e + 4), inv));
      ta = vminq_s32(vmaxq_s32(ta, tmin), tmax);
      tb = vminq_s32(vmaxq_s32(tb, tmin), tmax);
      int8_t* base = planes + (e / CW) * 3 * CW;
      const int64_t cc = e % CW;  // position of the block inside its chunk
      if (bits == 4) {
        // Even / odd elements of the 8, to the even / odd halves of each plane.
        const int32x4_t ev = vuzp1q_s32(ta, tb), od = vuzp2q_s32(ta, tb);
        vi d2, d1, d0;
        plane_digits((vi)ev, d2, d1, d0);
        const vi* dg[3] = {&d2, &d1, &d0};
        for (int p = 0; p < 3; p++)
          for (int j = 0; j < 4; j++) base[p * CW + cc / 2 + j] = int8_t((*dg[p])[j]);
        plane_digits((vi)od, d2, d1, d0);
        for (int p = 0; p < 3; p++)
          for (int j = 0; j < 4; j++) base[p * CW + CW / 2 + cc / 2 + j] = int8_t((*dg[p])[j]);
      } else {
        vi d2, d1, d0;
        const vi* dg[3] = {&d2, &d1, &d0};
        plane_digits((vi)ta, d2, d1, d0);
        for (int p = 0; p < 3; p++)
          for (int j = 0; j < 4; j++) base[p * CW + cc + j] = int8_t((*dg[p])[j]);
        plane_digits((vi)tb, d2, d1, d0);
        for (int p = 0; p < 3; p++)
          for (int j = 0; j < 4; j++) base[p * CW + cc + 4 + j] = int8_t((*dg[p])[j]);
      }
    }
  }
  return true;
}

// Row n of W against MB prepared x rows. One row at a time: W is read as one sequential stream per
// thread and the x planes stay in L1/L2. Groups are walked in order; each group's three digit-plane
// sums stay in i32 until the group ends.
template <int BITS, int SD, int MB>
static void neon_dot_row(const int8_t* planes, const float* sx, const float* xsum, int64_t K, const WeightRef& w,
                         const float* bias, float* y, int64_t N, int64_t n) {
  constexpr int CW = BITS == 4 ? kDotQ4Chunk : kDotQ8Chunk, PB = 3 * CW;
  const int G = w.group;
  const int64_t gpr = K / G, row_bytes = K * BITS / 8, xplane = (K / CW) * PB;
  const uint8_t* row = w.data + n * row_bytes;
  TilePrefetch pref(row, gemv_prefetch_distance(1, row_bytes));
  const int nch = G / CW;  // chunks per group
  float32x4_t acc[MB];
  float bsum[MB];
  for (int m = 0; m < MB; m++) {
    acc[m] = vdupq_n_f32(0.f);
    bsum[m] = 0.f;
  }
  for (int64_t g = 0; g < gpr; g++) {
    const uint8_t* wq = row + g * G * BITS / 8;
    int32x4_t a2[MB], a1[MB], a0[MB];
    for (int m = 0; m < MB; m++) a2[m] = a1[m] = a0[m] = vdupq_n_s32(0);
    for (int i = 0; i < nch; i++) {
      pref.advance(16);  // see TilePrefetch
      const uint8x16_t v = vld1q_u8(wq + i * 16);
      const int64_t chunk = (g * G) / CW + i;
      if (BITS == 4) {
        const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0f)));
        const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
        for (int m = 0; m < MB; m++) {
          const int8_t* p = planes + m * xplane + chunk * PB;
          a2[m] = vdotq_s32(vdotq_s32(a2[m], lo, vld1q_s8(p + 0)), hi, vld1q_s8(p + 16));
          a1[m] = vdotq_s32(vdotq_s32(a1[m], lo, vld1q_s8(p + 32)), hi, vld1q_s8(p + 48));
          a0[m] = vdotq_s32(vdotq_s32(a0[m], lo, vld1q_s8(p + 64)), hi, vld1q_s8(p + 80));
        }
      } else {
        const int8x16_t q = vreinterpretq_s8_u8(veorq_u8(v, vdupq_n_u8(0x80)));  // q - 128
        for (int m = 0; m < MB; m++) {
          const int8_t* p = planes + m * xplane + chunk * PB;
          a2[m] = vdotq_s32(a2[m], q, vld1q_s8(p + 0));
          a1[m] = vdotq_s32(a1[m], q, vld1q_s8(p + 16));
          a0[m] = vdotq_s32(a0[m], q, vld1q_s8(p + 32));
        }
      }
    }
    const float s = scale_t<SD>(w.scales, n * gpr + g), b = scale_t<SD>(w.biases, n * gpr + g);
    // 8-bit: the re-centring term 128 * s * sum x joins the bias term (see the header comment).
    const float bterm = BITS == 8 ? b + 128.f * s : b;
    for (int m = 0; m < MB; m++) {
      // t = d2 * 65536 + d1 * 256 + d0 per lane, in f32 (each partial sum converts exactly).
      float32x4_t t = vcvtq_f32_s32(a0[m]);
      t = vfmaq_n_f32(t, vcvtq_f32_s32(a1[m]), 256.f);
      t = vfmaq_n_f32(t, vcvtq_f32_s32(a2[m]), 65536.f);
      acc[m] = vfmaq_n_f32(acc[m], t, s * sx[m * gpr + g]);
      bsum[m] += bterm * xsum[m * gpr + g];
    }
  }
  for (int m = 0; m < MB; m++) {
    const float v = vaddvq_f32(acc[m]) + bsum[m];
    y[m * N + n] = bias ? v + bias[n] : v;
  }
}
#endif  // NEON dot-product GEMV
