// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

// ---------------------------------------------------------------------------------------------
// Norms, softmax, elementwise.

static inline int64_t row_grain(int64_t dim) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, dim)); }

static void rms_norm(const float* x, int64_t rows, int64_t dim, const float* w, float eps, bool plus_one, float* out) {
  parallel_for(rows, row_grain(dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      vf acc = vsplat(0.f);
      int64_t i = 0;
      for (; i + VL <= dim; i += VL) { vf v = vload(xr + i); acc += v * v; }
      float ss = hsum(acc);
      for (; i < dim; i++) ss += xr[i] * xr[i];
      const float inv = 1.0f / std::sqrt(ss / float(dim) + eps);
      for (i = 0; i < dim; i++) {
        const float g = w ? (plus_one ? 1.0f + w[i] : w[i]) : 1.0f;
        o[i] = xr[i] * inv * g;
      }
    }
  });
}

static void layer_norm(const float* x, int64_t rows, int64_t dim, const float* w, const float* b, float eps, float* out) {
  parallel_for(rows, row_grain(dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      double mean = 0;
      for (int64_t i = 0; i < dim; i++) mean += xr[i];
      mean /= double(dim);
      double var = 0;
      for (int64_t i = 0; i < dim; i++) { double d = xr[i] - mean; var += d * d; }
      var /= double(dim);
      const float inv = float(1.0 / std::sqrt(var + double(eps)));
      const float mf = float(mean);
      for (int64_t i = 0; i < dim; i++) {
        float v = (xr[i] - mf) * inv;
        if (w) v *= w[i];
        if (b) v += b[i];
        o[i] = v;
      }
    }
  });
}

static void softmax_row(const float* x, int64_t dim, float* o) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < dim; i++) mx = x[i] > mx ? x[i] : mx;
  if (mx == -INFINITY) {  // fully masked row: define as uniform zero rather than NaN...
    bool any_nan = false;  // ...unless the row holds NaN (the max above skips it): then NaN, not zeros
    for (int64_t i = 0; i < dim; i++) any_nan |= std::isnan(x[i]);
    for (int64_t i = 0; i < dim; i++) o[i] = any_nan ? NAN : 0.f;
    return;
  }
  float sum = 0.f;
  int64_t i = 0;
  vf vs = vsplat(0.f);
  for (; i + VL <= dim; i += VL) { vf e = vexp(vload(x + i) - mx); vstore(o + i, e); vs += e; }
  sum = hsum(vs);
  for (; i < dim; i++) { o[i] = std::exp(x[i] - mx); sum += o[i]; }
  const float inv = 1.0f / sum;
  for (i = 0; i < dim; i++) o[i] *= inv;
}

static void softmax(const float* x, int64_t rows, int64_t dim, float* out) {
  parallel_for(rows, row_grain(dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) softmax_row(x + r * dim, dim, out + r * dim);
  });
}

static inline vf unary_v(int op, vf v) {
  switch (op) {
    case kSilu: return v / (1.0f + vexp(-v));
    // 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)): no cancellation where tanh(u) is near -1.
    case kGeluTanh: return v / (1.0f + vexp(-1.5957691216057308f * (v + 0.044715f * v * v * v)));
    case kRelu: return v < 0.f ? vsplat(0.f) : v;  // NaN passes through (vmax would give 0)
    case kTanh: return vtanh(v);
    case kExp: return vexp(v);
    case kSigmoid: return 1.0f / (1.0f + vexp(-v));
    case kNeg: return -v;
    case kSquare: return v * v;
    default: return v;
  }
}
static inline float unary_s(int op, float v) {
  switch (op) {
    case kSilu: return v / (1.0f + std::exp(-v));
    case kGeluTanh: return v / (1.0f + std::exp(-1.5957691216057308f * (v + 0.044715f * v * v * v)));
    case kGeluErf: return 0.5f * v * (1.0f + std::erf(v * 0.7071067811865476f));
    case kRelu: return v < 0.f ? 0.f : v;  // NaN passes through
    case kTanh: return std::tanh(v);
    case kExp: return std::exp(v);
    case kSigmoid: return 1.0f / (1.0f + std::exp(-v));
    case kNeg: return -v;
    case kSquare: return v * v;
    case kSqrt: return std::sqrt(v);
    default: return v;
  }
}

static void unary(int op, const float* x, int64_t n, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    if (op != kGeluErf && op != kSqrt)
      for (; i + VL <= i1; i += VL) vstore(out + i, unary_v(op, vload(x + i)));
    for (; i < i1; i++) out[i] = unary_s(op, x[i]);
  });
}

static inline float binary_s(int op, float a, float b) {
  switch (op) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return a / b;
    default: return a > b ? a : b;
  }
}

static void binary(int op, const float* a, int64_t n, const float* b, int64_t nb, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    if (nb == n) {
      int64_t i = i0;
      for (; i + VL <= i1; i += VL) {
        vf x = vload(a + i), y = vload(b + i), r;
        switch (op) {
          case kAdd: r = x + y; break;
          case kSub: r = x - y; break;
          case kMul: r = x * y; break;
          case kDiv: r = x / y; break;
          default: r = vmax(x, y); break;
        }
        vstore(out + i, r);
      }
      for (; i < i1; i++) out[i] = binary_s(op, a[i], b[i]);
    } else {
      for (int64_t i = i0; i < i1; i++) out[i] = binary_s(op, a[i], b[i % nb]);
    }
  });
}

static void affine(const float* x, int64_t n, float s, float t, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + VL <= i1; i += VL) vstore(out + i, vload(x + i) * s + t);
    for (; i < i1; i++) out[i] = x[i] * s + t;
  });
}

// out[i] = sum_j c[j] * xs[j][i] for k inputs (k <= kMaxLinComb). Element-wise, so out may be one of the
// inputs. Gemma 3n's AltUp mixes its K residual streams this way every layer.
static void lincomb(const float* const* xs, const float* c, int k, int64_t n, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + VL <= i1; i += VL) {
      vf a = vload(xs[0] + i) * c[0];
      for (int j = 1; j < k; j++) a += vload(xs[j] + i) * c[j];
      vstore(out + i, a);
    }
    for (; i < i1; i++) {
      float a = xs[0][i] * c[0];
      for (int j = 1; j < k; j++) a += xs[j][i] * c[j];
      out[i] = a;
    }
  });
}
