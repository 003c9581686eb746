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
      // o = (x * inv) * g, element by element the same operations in vectors and in the tail (the
      // weighted forms were left scalar by the compiler: 4x slower than the unweighted one).
      const vf vinv = vsplat(inv);
      i = 0;
      if (w && plus_one)
        for (; i + VL <= dim; i += VL) vstore(o + i, (vload(xr + i) * vinv) * (1.0f + vload(w + i)));
      else if (w)
        for (; i + VL <= dim; i += VL) vstore(o + i, (vload(xr + i) * vinv) * vload(w + i));
      for (; i < dim; i++) {
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

// Log-softmax of one row (the sampler's step over the whole vocabulary, ~262k logits for Gemma):
// out = x - (max + log sum_i exp(x_i - max)); out may be x. Also reports the max, the first index holding
// it and the first NaN (n when none): when a NaN is present, or the max is +inf or -inf, out is left
// unspecified and the caller reports the row. The row is cut into fixed blocks of kLsmBlock elements:
// each block's exp sum is one f32 vector sum, the blocks are added in double in order, so the result
// does not depend on the thread count.
constexpr int64_t kLsmBlock = 4096;
struct LsmBlock {
  float max, sum;
  int64_t argmax, nan_at;
};
static void log_softmax_row(const float* x, int64_t n, float* out, float* max_out, int64_t* argmax_out, int64_t* nan_out) {
  const int64_t nb = (n + kLsmBlock - 1) / kLsmBlock;
  static thread_local std::vector<LsmBlock> s_blocks;  // the caller's; workers write disjoint entries
  if (int64_t(s_blocks.size()) < nb) s_blocks.resize(size_t(nb));
  LsmBlock* blocks = s_blocks.data();
  parallel_for(nb, 4, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b++) {
      const int64_t i0 = b * kLsmBlock, i1 = std::min(n, i0 + kLsmBlock);
      vf mx = vsplat(-INFINITY);
      vu nan = {};
      int64_t i = i0;
      for (; i + VL <= i1; i += VL) {
        const vf v = vload(x + i);
        nan |= (vu)(v != v);
        mx = vmax(mx, v);
      }
      float m = hmax(mx);
      bool any_nan = false;
      for (int l = 0; l < VL; l++) any_nan |= nan[l] != 0;
      for (; i < i1; i++) {
        any_nan |= x[i] != x[i];
        m = x[i] > m ? x[i] : m;
      }
      LsmBlock& r = blocks[b];
      r.max = m;
      r.nan_at = n;
      r.argmax = -1;
      if (any_nan) {
        for (int64_t j = i0; j < i1; j++)
          if (x[j] != x[j]) {
            r.nan_at = j;
            break;
          }
        continue;
      }
      for (int64_t j = i0; j < i1; j++)
        if (x[j] == m) {
          r.argmax = j;
          break;
        }
    }
  });
  float m = -INFINITY;
  int64_t arg = -1, nan_at = n;
  for (int64_t b = 0; b < nb; b++) {
    nan_at = std::min(nan_at, blocks[b].nan_at);
    if (blocks[b].argmax >= 0 && blocks[b].max > m) {
      m = blocks[b].max;
      arg = blocks[b].argmax;
    }
  }
  *max_out = m;
  *argmax_out = arg;
  *nan_out = nan_at;
  if (nan_at < n || arg < 0 || m == INFINITY || m == -INFINITY) return;
  parallel_for(nb, 4, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b++) {
      const int64_t i0 = b * kLsmBlock, i1 = std::min(n, i0 + kLsmBlock);
      vf acc = vsplat(0.f);
      int64_t i = i0;
      for (; i + VL <= i1; i += VL) acc += vexp(vload(x + i) - m);
      float s = hsum(acc);
      for (; i < i1; i++) s += std::exp(x[i] - m);
      blocks[b].sum = s;
    }
  });
  double total = 0;
  for (int64_t b = 0; b < nb; b++) total += double(blocks[b].sum);
  // lse as two floats (hi + lo): one f32 lse could be off by half an ulp of |lse| (1.9e-6 at 40), more
  // than the logprob's own rounding; subtracting both parts keeps each output within ~1 ulp of itself.
  const double lse = double(m) + std::log(total);
  const float hi = float(lse), lo = float(lse - double(hi));
  parallel_for(nb, 4, [&](int64_t b0, int64_t b1) {
    const int64_t i0 = b0 * kLsmBlock, i1 = std::min(n, b1 * kLsmBlock);
    int64_t i = i0;
    for (; i + VL <= i1; i += VL) vstore(out + i, (vload(x + i) - hi) - lo);
    for (; i < i1; i++) out[i] = (x[i] - hi) - lo;
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

// The last n < VL elements of a run as one zero-padded vector, and back: a vectorized op then computes
// its tail with the same code as its body, so an element's result does not depend on where it sits in
// the array (the rows of a batch equal the same rows alone, whatever the batch's length).
static inline vf vload_part(const float* p, int64_t n) {
  float t[VL] = {};
  for (int64_t i = 0; i < n; i++) t[i] = p[i];
  return vload(t);
}
static inline void vstore_part(float* p, vf v, int64_t n) {
  float t[VL];
  vstore(t, v);
  for (int64_t i = 0; i < n; i++) p[i] = t[i];
}

static void unary(int op, const float* x, int64_t n, float* out) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    if (op != kGeluErf && op != kSqrt) {
      for (; i + VL <= i1; i += VL) vstore(out + i, unary_v(op, vload(x + i)));
      if (i < i1) vstore_part(out + i, unary_v(op, vload_part(x + i, i1 - i)), i1 - i);
      return;
    }
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

// out_i[t, :] = sum_j c[t, i, j] * xs[j][t, :] for I outputs and J inputs, rows t of width H: K stream
// mixes per row in one pass (Gemma 3n's AltUp predict and correct: every output is a per-token linear
// combination of the K residual streams). Per element every input is read before any output is
// written, so outputs may alias inputs. Terms are summed in input order as lincomb sums them, and a
// term whose coefficient is exactly 0 is left out (so 0 * Inf adds nothing). J, I <= kMaxMix.
static void mix_streams(const float* const* xs, int J, const float* c, float* const* outs, int I, int64_t rows, int64_t H) {
  const int64_t rows_grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, H));
  parallel_for(rows, rows_grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      // This row's nonzero terms per output, in input order (decided once per row, not per element).
      int nz[kMaxMix], src[kMaxMix][kMaxMix];
      float cf[kMaxMix][kMaxMix];
      for (int i = 0; i < I; i++) {
        nz[i] = 0;
        for (int j = 0; j < J; j++) {
          const float cij = c[(t * I + i) * J + j];
          if (cij != 0.f) {
            src[i][nz[i]] = j;
            cf[i][nz[i]++] = cij;
          }
        }
      }
      const int64_t o = t * H;
      int64_t e = 0;
      for (; e + VL <= H; e += VL) {
        vf v[kMaxMix], r[kMaxMix];
        for (int j = 0; j < J; j++) v[j] = vload(xs[j] + o + e);
        for (int i = 0; i < I; i++) {
          vf a = vsplat(0.f);
          if (nz[i] > 0) a = v[src[i][0]] * cf[i][0];
          for (int k = 1; k < nz[i]; k++) a += v[src[i][k]] * cf[i][k];
          r[i] = a;
        }
        for (int i = 0; i < I; i++) vstore(outs[i] + o + e, r[i]);
      }
      for (; e < H; e++) {
        float v[kMaxMix], r[kMaxMix];
        for (int j = 0; j < J; j++) v[j] = xs[j][o + e];
        for (int i = 0; i < I; i++) {
          float a = 0.f;
          if (nz[i] > 0) a = v[src[i][0]] * cf[i][0];
          for (int k = 1; k < nz[i]; k++) a += v[src[i][k]] * cf[i][k];
          r[i] = a;
        }
        for (int i = 0; i < I; i++) outs[i][o + e] = r[i];
      }
    }
  });
}

// The final logit soft-cap and the per-step NaN/Inf check in one pass: out = cap * tanh(x / cap)
// (cap > 0; cap == 0 copies x), element by element as affine, tanh, affine would compute it, except
// that non-finite elements are copied unchanged (so the caller can report the value). Returns the
// index of the first non-finite element of x, or -1.
static int64_t softcap_check(const float* x, int64_t n, float cap, float* out) {
  std::atomic<int64_t> first{n};
  const float inv = cap > 0.f ? 1.0f / cap : 0.f;
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    int64_t bad = -1;
    int64_t i = i0;
    for (; i + VL <= i1; i += VL) {
      const vf v = vload(x + i);
      const vu fin = (vu)((as_u(v) & 0x7f800000u) != 0x7f800000u);  // all ones where finite
      bool all = true;
      for (int l = 0; l < VL; l++) all &= fin[l] != 0;
      if (!all && bad < 0)
        for (int l = 0; l < VL; l++)
          if (!fin[l]) { bad = i + l; break; }
      if (cap > 0.f) {
        const vf r = vtanh(v * inv) * cap;
        vstore(out + i, as_f((as_u(r) & fin) | (as_u(v) & ~fin)));
      } else if (out != x) {
        vstore(out + i, v);
      }
    }
    if (i < i1) {  // the tail as one padded vector (the same arithmetic as the body, see vload_part)
      const int64_t nt = i1 - i;
      const vf v = vload_part(x + i, nt);
      for (int64_t l = 0; l < nt; l++)
        if (!std::isfinite(v[l])) {
          if (bad < 0) bad = i + l;
          break;
        }
      if (cap > 0.f) {
        const vu fin = (vu)((as_u(v) & 0x7f800000u) != 0x7f800000u);
        const vf r = vtanh(v * inv) * cap;
        vstore_part(out + i, as_f((as_u(r) & fin) | (as_u(v) & ~fin)), nt);
      } else if (out != x) {
        vstore_part(out + i, v, nt);
      }
    }
    if (bad >= 0) {
      int64_t cur = first.load();
      while (bad < cur && !first.compare_exchange_weak(cur, bad)) {
      }
    }
  });
  const int64_t f = first.load();
  return f < n ? f : -1;
}

// out[r, i] = act(x[r, i]) * x[r, half + i] over x [rows, 2 * half] = [gate | up] (a fused gate/up
// projection: Phi-3's gate_up_proj), act = SiLU or GELU (tanh) as unary computes them.
static void gated_act(const float* x, int64_t rows, int64_t half, int act, float* out) {
  parallel_for(rows, row_grain(2 * half), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float* g = x + r * 2 * half;
      const float* u = g + half;
      float* o = out + r * half;
      int64_t i = 0;
      for (; i + VL <= half; i += VL) vstore(o + i, unary_v(act, vload(g + i)) * vload(u + i));
      if (i < half) vstore_part(o + i, unary_v(act, vload_part(g + i, half - i)) * vload_part(u + i, half - i), half - i);
    }
  });
}

// Gemma 3n's activation sparsity ("gaussian top-k") in place over rows of width dim:
// x <- max(x - (mean + std * z), 0), mean and population std of the row. The statistics and the
// subtraction are in double, as the reference computes them in full precision; the result is rounded
// to f32 once.
static void gaussian_topk(float* x, int64_t rows, int64_t dim, double z) {
  parallel_for(rows, row_grain(dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      float* g = x + r * dim;
      // Eight independent double accumulators (element i in lane i % 8), combined pairwise at the end:
      // one serial chain of `dim` dependent adds took ~4 cycles per element. The order depends on dim
      // alone, so a row's result does not depend on the batch it is in.
      double acc[8] = {};
      int64_t i = 0;
      for (; i + 8 <= dim; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += g[i + j];
      for (int j = 0; i < dim; i++, j++) acc[j] += g[i];
      const double sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
      const double mean = sum / double(dim);
      for (int j = 0; j < 8; j++) acc[j] = 0;
      for (i = 0; i + 8 <= dim; i += 8)
        for (int j = 0; j < 8; j++) {
          const double d = g[i + j] - mean;
          acc[j] += d * d;
        }
      for (int j = 0; i < dim; i++, j++) {
        const double d = g[i] - mean;
        acc[j] += d * d;
      }
      const double ss = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
      const double cutoff = mean + std::sqrt(ss / double(dim)) * z;
      for (int64_t i = 0; i < dim; i++) {
        const double v = g[i] - cutoff;
        g[i] = v > 0 ? float(v) : 0.f;
      }
    }
  });
}
