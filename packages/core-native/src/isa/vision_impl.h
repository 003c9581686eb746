// Vision kernels (MobileNetV5 depthwise convolution and the MSFA's resampling), included into kernels_impl.h inside the variant
// namespace (MLX_NS) after audio_impl.h, so the vector helpers and parallel_for are in scope.
// Not a standalone header: no include guard on purpose.

// ---------------------------------------------------------------------------------------------
// Depthwise conv2d, channels-last: x [h, w, C] -> out [out_h, out_w, C], weight [kh*kw, C] (tap-major,
// so one tap's weights for VL channels are one vector load), zero padding (pad_top / pad_left given,
// bottom / right implied by out_h / out_w). Output rows are split across threads; every output pixel
// accumulates its kh*kw taps over channel vectors in f32.

static void dwconv2d(const DwConv2dArgs& a) {
  const int64_t C = a.c;
  parallel_for(a.out_h, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t oy = r0; oy < r1; oy++) {
      for (int64_t ox = 0; ox < a.out_w; ox++) {
        float* o = a.out + (oy * a.out_w + ox) * C;
        int64_t c = 0;
        for (; c + VL <= C; c += VL) {
          vf acc = vsplat(0.f);
          for (int ky = 0; ky < a.kh; ky++) {
            const int64_t iy = oy * a.sh + ky - a.pad_top;
            if (iy < 0 || iy >= a.h) continue;
            for (int kx = 0; kx < a.kw; kx++) {
              const int64_t ix = ox * a.sw + kx - a.pad_left;
              if (ix < 0 || ix >= a.w) continue;
              acc += vload(a.weight + (ky * a.kw + kx) * C + c) * vload(a.x + (iy * a.w + ix) * C + c);
            }
          }
          vstore(o + c, acc);
        }
        for (; c < C; c++) {
          float acc = 0.f;
          for (int ky = 0; ky < a.kh; ky++) {
            const int64_t iy = oy * a.sh + ky - a.pad_top;
            if (iy < 0 || iy >= a.h) continue;
            for (int kx = 0; kx < a.kw; kx++) {
              const int64_t ix = ox * a.sw + kx - a.pad_left;
              if (ix < 0 || ix >= a.w) continue;
              acc += a.weight[(ky * a.kw + kx) * C + c] * a.x[(iy * a.w + ix) * C + c];
            }
          }
          o[c] = acc;
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// MSFA resampling (timm MobileNetV5MultiScaleFusionAdapter.forward), channels-last x [h, w, C] ->
// out [out_h, out_w, C]; rows of the output are split across threads, channels run in vectors.

// Average pool, kernel = stride = (kh, kw), no padding (F.avg_pool2d): each output sums its kh*kw
// inputs in f32, row by row, then divides by kh*kw in f32, as PyTorch's CPU kernel does.
static void avg_pool2d(const Resample2dArgs& a) {
  const int64_t C = a.c;
  const float n = float(int64_t(a.kh) * a.kw);  // the divisor, as PyTorch divides (in f32)
  parallel_for(a.out_h, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t oy = r0; oy < r1; oy++)
      for (int64_t ox = 0; ox < a.out_w; ox++) {
        float* o = a.out + (oy * a.out_w + ox) * C;
        int64_t c = 0;
        for (; c + VL <= C; c += VL) {
          vf acc = vsplat(0.f);
          for (int dy = 0; dy < a.kh; dy++)
            for (int dx = 0; dx < a.kw; dx++) acc += vload(a.x + ((oy * a.kh + dy) * a.w + ox * a.kw + dx) * C + c);
          vstore(o + c, acc / n);
        }
        for (; c < C; c++) {
          float acc = 0.f;
          for (int dy = 0; dy < a.kh; dy++)
            for (int dx = 0; dx < a.kw; dx++) acc += a.x[((oy * a.kh + dy) * a.w + ox * a.kw + dx) * C + c];
          o[c] = acc / n;
        }
      }
  });
}

// Nearest resize (F.interpolate mode "nearest"): src = floor(dst * in / out) in exact integer
// arithmetic (PyTorch's float scale gives the same index for the MSFA's exact 2x / 1x ratios).
static void resize_nearest2d(const Resample2dArgs& a) {
  const int64_t C = a.c;
  parallel_for(a.out_h, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t oy = r0; oy < r1; oy++) {
      const int64_t sy = (oy * a.h) / a.out_h;
      for (int64_t ox = 0; ox < a.out_w; ox++) {
        const int64_t sx = (ox * a.w) / a.out_w;
        std::memcpy(a.out + (oy * a.out_w + ox) * C, a.x + (sy * a.w + sx) * C, size_t(C) * sizeof(float));
      }
    }
  });
}

// PyTorch's linear source index and weights for one axis (align_corners = false, no antialias):
// real = max(in / out * (dst + 0.5) - 0.5, 0) in f32, i0 = floor(real) (<= in - 1), i1 = i0 + 1 unless
// i0 is the last index, lambda = clamp(real - i0, 0, 1); weights (1 - lambda, lambda).
static inline void linear_tap(int64_t dst, int64_t in, int64_t out, int64_t& i0, int64_t& i1, float& w0, float& w1) {
  const float scale = float(in) / float(out);
  float real = scale * (float(dst) + 0.5f) - 0.5f;
  if (real < 0.f) real = 0.f;
  i0 = std::min(int64_t(real), in - 1);
  i1 = i0 + (i0 < in - 1 ? 1 : 0);
  float l = real - float(i0);
  l = l < 0.f ? 0.f : (l > 1.f ? 1.f : l);
  w1 = l;
  w0 = 1.f - l;
}

// Bilinear resize (F.interpolate mode "bilinear", align_corners = false): out = (x00 w0 + x01 w1) h0 +
// (x10 w0 + x11 w1) h1, the order of PyTorch's separable CPU kernel (width inside, height outside).
static void resize_bilinear2d(const Resample2dArgs& a) {
  const int64_t C = a.c;
  parallel_for(a.out_h, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t oy = r0; oy < r1; oy++) {
      int64_t y0, y1;
      float h0, h1;
      linear_tap(oy, a.h, a.out_h, y0, y1, h0, h1);
      for (int64_t ox = 0; ox < a.out_w; ox++) {
        int64_t x0, x1;
        float w0, w1;
        linear_tap(ox, a.w, a.out_w, x0, x1, w0, w1);
        const float* p00 = a.x + (y0 * a.w + x0) * C;
        const float* p01 = a.x + (y0 * a.w + x1) * C;
        const float* p10 = a.x + (y1 * a.w + x0) * C;
        const float* p11 = a.x + (y1 * a.w + x1) * C;
        float* o = a.out + (oy * a.out_w + ox) * C;
        int64_t c = 0;
        for (; c + VL <= C; c += VL) {
          const vf t0 = vload(p00 + c) * w0 + vload(p01 + c) * w1;
          const vf t1 = vload(p10 + c) * w0 + vload(p11 + c) * w1;
          vstore(o + c, t0 * h0 + t1 * h1);
        }
        for (; c < C; c++) {
          const float t0 = p00[c] * w0 + p01[c] * w1;
          const float t1 = p10[c] * w0 + p11[c] * w1;
          o[c] = t0 * h0 + t1 * h1;
        }
      }
    }
  });
}
