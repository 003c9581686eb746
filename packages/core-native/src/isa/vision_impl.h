// Vision kernels (MobileNetV5 depthwise convolution), included into kernels_impl.h inside the variant
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
