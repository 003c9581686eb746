// Audio kernels (log-mel front end, subsampling conv2d, light-conv depthwise conv, banded local attention
// with relative positions), included into kernels_impl.h inside the variant namespace (MLX_NS) after
// attention_impl.h, so matmul, vexp and the vector helpers are in scope.
// Not a standalone header: no include guard on purpose.

// ---------------------------------------------------------------------------------------------
// Log-mel spectrogram. The HF/numpy references window the frame in f32 and then run the rFFT, the
// magnitude, the mel matmul and the log in float64; we do the same so near-floor bins (where the
// magnitude comes from cancellation) agree. Radix-2 complex FFT in double, one frame per task.

static void fft_radix2(double* re, double* im, int n, const double* cs, const double* sn, const int* rev) {
  for (int i = 0; i < n; i++) {
    const int j = rev[i];
    if (j > i) {
      std::swap(re[i], re[j]);
      std::swap(im[i], im[j]);
    }
  }
  for (int len = 2; len <= n; len <<= 1) {
    const int half = len >> 1, step = n / len;
    for (int i = 0; i < n; i += len)
      for (int j = 0; j < half; j++) {
        // Forward transform: twiddle e^{-2 pi i j / len} = cs - i sn.
        const double wr = cs[j * step], wi = -sn[j * step];
        double* ar = re + i + j;
        double* ai = im + i + j;
        const double br = ar[half] * wr - ai[half] * wi;
        const double bi = ar[half] * wi + ai[half] * wr;
        ar[half] = ar[0] - br;
        ai[half] = ai[0] - bi;
        ar[0] += br;
        ai[0] += bi;
      }
  }
}

// One rounding per numpy op: the references compute preemphasis and windowing in f32 element-wise,
// with the Python-double coefficients (alpha, 1 - alpha) cast to f32, `alpha * x` rounded before the
// subtraction. The volatile temporary keeps -ffp-contract=fast from fusing the two into an fma.
static void frame_f32(const float* x, int fl, double alpha, bool htk, const float* window, float* y) {
  const float a32 = float(alpha), first = float(1.0 - alpha);
  if (alpha > 0.0) {
    if (htk) {
      y[0] = x[0] * first;
      for (int n = 1; n < fl; n++) {
        volatile float t = a32 * x[n - 1];
        y[n] = x[n] - t;
      }
    } else {
      for (int n = 0; n < fl; n++) {
        volatile float t = a32 * x[n];
        y[n] = x[n + 1] - t;
      }
    }
  } else {
    for (int n = 0; n < fl; n++) y[n] = x[n];
  }
  for (int n = 0; n < fl; n++) y[n] = y[n] * window[n];
}

static void log_mel(const LogMelArgs& a) {
  const int nf = a.fft_size, nb = nf / 2 + 1, nm = a.n_mel;
  std::unique_ptr<double[]> cs(new double[size_t(nf / 2)]), sn(new double[size_t(nf / 2)]);
  std::unique_ptr<int[]> rev(new int[size_t(nf)]);
  for (int j = 0; j < nf / 2; j++) {
    const double ang = 6.283185307179586476925 * double(j) / double(nf);
    cs[j] = std::cos(ang);
    sn[j] = std::sin(ang);
  }
  int bits = 0;
  while ((1 << bits) < nf) bits++;
  for (int i = 0; i < nf; i++) {
    int r = 0;
    for (int b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
    rev[i] = r;
  }
  // Each triangle touches a short run of bins; summing only that run is exact (the rest are zeros).
  std::unique_ptr<int[]> k0(new int[size_t(nm)]), k1(new int[size_t(nm)]);
  for (int m = 0; m < nm; m++) {
    int lo = nb, hi = 0;
    for (int k = 0; k < nb; k++)
      if (a.mel_filters[int64_t(k) * nm + m] != 0.0) {
        lo = std::min(lo, k);
        hi = k + 1;
      }
    k0[m] = lo;
    k1[m] = std::max(lo, hi);
  }
  parallel_for(a.n_frames, 8, [&](int64_t t0, int64_t t1) {
    std::unique_ptr<double[]> re(new double[size_t(nf)]), im(new double[size_t(nf)]), mag(new double[size_t(nb)]);
    std::unique_ptr<float[]> y(new float[size_t(a.frame_len)]);
    for (int64_t t = t0; t < t1; t++) {
      frame_f32(a.signal + t * a.hop, a.frame_len, a.preemphasis, a.preemphasis_htk, a.window, y.get());
      for (int n = 0; n < nf; n++) {
        re[n] = n < a.frame_len ? double(y[n]) : 0.0;
        im[n] = 0.0;
      }
      fft_radix2(re.get(), im.get(), nf, cs.get(), sn.get(), rev.get());
      for (int k = 0; k < nb; k++) mag[k] = std::hypot(re[k], im[k]);
      float* o = a.out + t * nm;
      for (int m = 0; m < nm; m++) {
        double s = 0.0;
        for (int k = k0[m]; k < k1[m]; k++) s += mag[k] * a.mel_filters[int64_t(k) * nm + m];
        const double v = a.floor_mode == 0 ? s + a.mel_floor : (s > a.mel_floor ? s : a.mel_floor);
        o[m] = float(std::log(v));
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// conv2d, channels-last: x [h, w, cin] -> out [out_h, out_w, cout], weight [cout, kh*kw*cin] in
// (kh, kw, cin) order, zero padding. Output rows are split across threads; each chunk is unfolded
// (im2col) into scratch and multiplied with the GEMM kernel, which runs inline inside the region.

static void conv2d(const Conv2dArgs& a) {
  const int64_t K = int64_t(a.kh) * a.kw * a.cin;
  WeightRef w;
  w.dtype = kF32;
  w.data = reinterpret_cast<const uint8_t*>(a.weight);
  w.rows = a.cout;
  w.cols = K;
  const int64_t row_floats = a.out_w * K;
  // Scratch of about 4 MB per chunk keeps the unfolded rows in L2/L3 between im2col and the GEMM.
  const int64_t rows_per = std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(1, row_floats));
  parallel_for(a.out_h, 1, [&](int64_t r0, int64_t r1) {
    std::unique_ptr<float[]> col(new float[size_t(std::min(rows_per, r1 - r0) * row_floats)]);
    for (int64_t rb = r0; rb < r1; rb += rows_per) {
      const int64_t re_ = std::min(r1, rb + rows_per);
      float* c = col.get();
      for (int64_t oy = rb; oy < re_; oy++)
        for (int64_t ox = 0; ox < a.out_w; ox++) {
          for (int ky = 0; ky < a.kh; ky++) {
            const int64_t iy = oy * a.sh + ky - a.pad_top;
            for (int kx = 0; kx < a.kw; kx++) {
              const int64_t ix = ox * a.sw + kx - a.pad_left;
              if (iy < 0 || iy >= a.h || ix < 0 || ix >= a.w) {
                for (int ci = 0; ci < a.cin; ci++) c[ci] = 0.f;
              } else {
                std::memcpy(c, a.x + (iy * a.w + ix) * a.cin, size_t(a.cin) * 4);
              }
              c += a.cin;
            }
          }
        }
      matmul(col.get(), (re_ - rb) * a.out_w, w, nullptr, a.out + rb * a.out_w * a.cout);
    }
  });
}

// Depthwise causal conv1d: out[t, c] = sum_k w[c, k] * x[t - (kk - 1) + k, c], x = 0 before t = 0.
static void dwconv1d_causal(const float* x, int64_t T, int64_t C, const float* w, int kk, float* out) {
  parallel_for(T, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      float* o = out + t * C;
      for (int64_t c = 0; c < C; c++) o[c] = 0.f;
      for (int k = 0; k < kk; k++) {
        const int64_t s = t - (kk - 1) + k;
        if (s < 0) continue;
        const float* xs = x + s * C;
        for (int64_t c = 0; c < C; c++) o[c] += w[c * kk + k] * xs[c];
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Banded local attention with a relative-position term (the Conformer's chunked attention in its
// banded form): query t sees keys s with -max_future <= t - s <= max_past (inclusive bounds, so each
// model states its own window), 0 <= s < n and valid[s]. Logit = q_t.k_s + q_t.rel[rel_dist0 - (t-s)]
// (rows outside the table contribute 0, like the reference's relative shift), then soft-cap, softmax
// in f32. A query with no admitted key outputs zeros.

static void local_attention(const LocalAttentionArgs& a) {
  const int D = a.head_dim, H = a.n_heads;
  const int64_t stride = int64_t(H) * D;
  const int span = a.max_past + a.max_future + 1;
  parallel_for(a.n * H, 8, [&](int64_t i0, int64_t i1) {
    std::unique_ptr<float[]> sc(new float[size_t(span)]);
    std::unique_ptr<int64_t[]> idx(new int64_t[size_t(span)]);
    for (int64_t task = i0; task < i1; task++) {
      const int64_t t = task / H;
      const int h = int(task % H);
      const float* q = a.q + t * stride + int64_t(h) * D;
      float* o = a.out + t * stride + int64_t(h) * D;
      int cnt = 0;
      float mx = -INFINITY;
      const int64_t s0 = std::max<int64_t>(0, t - a.max_past), s1 = std::min<int64_t>(a.n - 1, t + a.max_future);
      for (int64_t s = s0; s <= s1; s++) {
        if (a.valid && !a.valid[s]) continue;
        const float* k = a.k + s * stride + int64_t(h) * D;
        const int64_t r = int64_t(a.rel_dist0) - (t - s);
        const float* e = (r >= 0 && r < a.n_rel) ? a.rel + r * stride + int64_t(h) * D : nullptr;
        vf acc = vsplat(0.f);
        int d = 0;
        if (e) {
          for (; d + VL <= D; d += VL) acc += vload(q + d) * (vload(k + d) + vload(e + d));
        } else {
          for (; d + VL <= D; d += VL) acc += vload(q + d) * vload(k + d);
        }
        float l = hsum(acc);
        for (; d < D; d++) l += q[d] * (k[d] + (e ? e[d] : 0.f));
        if (a.softcap > 0.f) l = a.softcap * std::tanh(l / a.softcap);
        sc[cnt] = l;
        idx[cnt] = s;
        cnt++;
        mx = l > mx ? l : mx;
      }
      for (int d = 0; d < D; d++) o[d] = 0.f;
      if (cnt == 0) continue;
      float sum = 0.f;
      for (int c = 0; c < cnt; c++) {
        sc[c] = std::exp(sc[c] - mx);
        sum += sc[c];
      }
      const float inv = 1.0f / sum;
      for (int c = 0; c < cnt; c++) {
        const float p = sc[c] * inv;
        const float* v = a.v + idx[c] * stride + int64_t(h) * D;
        int d = 0;
        for (; d + VL <= D; d += VL) vstore(o + d, vload(o + d) + p * vload(v + d));
        for (; d < D; d++) o[d] += p * v[d];
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Small elementwise helpers of the conformer.

// out = min(max(x, lo), hi)
static void clamp(const float* x, int64_t n, float lo, float hi, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    const vf vlo = vsplat(lo), vhi = vsplat(hi);
    int64_t i = i0;
    for (; i + VL <= i1; i += VL) vstore(out + i, vclamp_nan(vload(x + i), vlo, vhi));
    for (; i < i1; i++) out[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];  // NaN passes through
  });
}

// GLU over the last axis: x [rows, 2*half] = [a | b] -> out [rows, half] = a * sigmoid(b).
static void glu(const float* x, int64_t rows, int64_t half, float* out) {
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, half)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* a = x + r * 2 * half;
      const float* b = a + half;
      float* o = out + r * half;
      int64_t i = 0;
      for (; i + VL <= half; i += VL) vstore(o + i, vload(a + i) / (1.0f + vexp(-vload(b + i))));
      for (; i < half; i++) o[i] = a[i] / (1.0f + std::exp(-b[i]));
    }
  });
}
