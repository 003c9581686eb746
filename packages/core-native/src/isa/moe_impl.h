// Mixture-of-experts SwiGLU block over stacked expert weights:
//   out[t] = sum_j w[t,j] * down_e( act(gate_e(x_t)) * up_e(x_t) ),  e = ids[t,j].
// Included into kernels_impl.h inside the variant namespace (MLX_NS), after the matmul/GEMV helpers
// it reuses. Not a standalone header: no include guard on purpose.
//
// Two execution paths with the same result (up to f32 summation order):
// - gather (decode): each (token, slot) pair runs GEMVs over its selected expert only; all pairs of a
//   phase share one parallel region, so a step with 1 token and 8 small experts is 2 regions, not 24.
// - grouped (prefill): pairs are counting-sorted by expert, each active expert runs one GEMM over its
//   tokens (its weights are read and dequantized once instead of once per token), and a weighted
//   unsort-and-reduce writes the output rows.
// No std:: algorithm templates here: this file is compiled once per ISA, and an std template
// instantiated in a wide-ISA unit could be picked by the linker for the baseline unit (see isa_*.cc).

// Rows [r0, r0 + n) of a weight as a weight of its own. Rows are contiguous in every storage format,
// so a view is pointer arithmetic: one expert of a stacked tensor, or the gate/up half of a fused one.
static WeightRef moe_row_view(const WeightRef& w, int64_t r0, int64_t n) {
  WeightRef v = w;
  v.rows = n;
  if (w.dtype == kQAffine) {
    const int64_t row_bytes = w.cols * w.bits / 8;
    const int64_t sbytes = (w.cols / w.group) * (w.scale_dtype == kF32 ? 4 : 2);
    v.data = w.data + r0 * row_bytes;
    v.scales = w.scales + r0 * sbytes;
    v.biases = w.biases + r0 * sbytes;
  } else {
    v.data = w.data + r0 * w.cols * (w.dtype == kF32 ? 4 : 2);
  }
  return v;
}

static inline int64_t moe_row_bytes(const WeightRef& w) {
  return w.dtype == kQAffine ? w.cols * w.bits / 8 : w.cols * (w.dtype == kF32 ? 4 : 2);
}

struct MoeExperts {
  const MoeArgs& a;
  WeightRef gate(int e) const { return moe_row_view(a.gate, (a.fused ? 2 * a.I : a.I) * e, a.I); }
  WeightRef up(int e) const { return a.fused ? moe_row_view(a.gate, 2 * a.I * e + a.I, a.I) : moe_row_view(a.up, a.I * e, a.I); }
  WeightRef down(int e) const { return moe_row_view(a.down, a.H * e, a.H); }
  const WeightRef& up_all() const { return a.fused ? a.gate : a.up; }
};

// h = act(g) * u. The tail goes through the vector code too (via a padded temporary), so every element
// gets the same arithmetic whatever the task split: the result does not depend on the thread count.
static void moe_act_mul(int op, const float* g, const float* u, int64_t n, float* h) {
  int64_t i = 0;
  for (; i + VL <= n; i += VL) vstore(h + i, unary_v(op, vload(g + i)) * vload(u + i));
  if (i < n) {
    float tg[VL] = {}, tu[VL] = {}, th[VL];
    for (int64_t j = i; j < n; j++) { tg[j - i] = g[j]; tu[j - i] = u[j]; }
    vstore(th, unary_v(op, vload(tg)) * vload(tu));
    for (int64_t j = i; j < n; j++) h[j] = th[j - i];
  }
}

// Rows of activations prepared for the single-row GEMV kernels of kernels_impl.h: the 4-bit fast path
// reads x permuted (permute_for_q4) and every quantized path needs per-group sums of x. Built once per
// call, not once per (pair, row block).
struct MoeGemvInput {
  std::unique_ptr<float[]> xp, xsum;
  const float* xs = nullptr;
  int64_t K = 0, gpr = 0;
};

static void moe_prep(const float* x, int64_t rows, const WeightRef& w, MoeGemvInput& in) {
  const int64_t K = w.cols;
  in.K = K;
  in.xs = x;
  if (w.dtype != kQAffine) return;
  in.gpr = K / w.group;
  if (w.bits == 4 && w.group % (2 * VL) == 0) {  // the condition gemv_q_rows uses for its fast path
    in.xp.reset(new float[size_t(rows * K)]);
    for (int64_t r = 0; r < rows; r++) permute_for_q4(x + r * K, K, in.xp.get() + r * K);
    in.xs = in.xp.get();
  }
  in.xsum.reset(new float[size_t(rows * in.gpr)]);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t g = 0; g < in.gpr; g++) {
      float t = 0.f;
      for (int64_t c = g * w.group; c < (g + 1) * w.group; c++) t += x[r * K + c];
      in.xsum[r * in.gpr + g] = t;
    }
}

// y[n] = W[n, :] . x_row for n in [n0, n1), W one expert's rows (y indexed by absolute n).
static void moe_gemv_rows(const MoeGemvInput& in, int64_t row, const WeightRef& w, float* y, int64_t n0, int64_t n1) {
  const float* x = in.xs + row * in.K;
  if (w.dtype != kQAffine) {
    gemv_float_rows<1>(x, in.K, w, nullptr, y, w.rows, n0, n1);
    return;
  }
  const float* xsum = in.xsum.get() + row * in.gpr;
  if (w.scale_dtype == kBF16) gemv_q_rows<1, kBF16>(x, xsum, in.K, w, nullptr, y, w.rows, n0, n1);
  else if (w.scale_dtype == kF16) gemv_q_rows<1, kF16>(x, xsum, in.K, w, nullptr, y, w.rows, n0, n1);
  else gemv_q_rows<1, kF32>(x, xsum, in.K, w, nullptr, y, w.rows, n0, n1);
}

// Rows per task so that each task streams at least ~64 KB of weights.
static inline int64_t moe_grain(int64_t row_bytes) {
  const int64_t g = (64 * 1024) / (row_bytes > 0 ? row_bytes : 1);
  return g < 4 ? 4 : g;
}

static void moe_gather(const MoeArgs& a) {
  const MoeExperts ex{a};
  const int64_t T = a.T, H = a.H, I = a.I, k = a.k, P = T * k;
  // Phase 1: h[p] = act(gate_e . x_t) * (up_e . x_t) for every pair p = t*k + j, split by output rows.
  MoeGemvInput xg, xu;
  moe_prep(a.x, T, a.gate, xg);
  moe_prep(a.x, T, ex.up_all(), xu);
  std::unique_ptr<float[]> h(new float[size_t(P * I)]), u(new float[size_t(P * I)]);
  parallel_for(P * I, moe_grain(moe_row_bytes(a.gate) + moe_row_bytes(ex.up_all())), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1;) {
      const int64_t p = r / I, n0 = r % I;
      const int64_t n1 = n0 + (r1 - r) < I ? n0 + (r1 - r) : I;
      const int e = a.ids[p];
      float* hp = h.get() + p * I;
      float* up = u.get() + p * I;
      moe_gemv_rows(xg, p / k, ex.gate(e), hp, n0, n1);
      moe_gemv_rows(xu, p / k, ex.up(e), up, n0, n1);
      moe_act_mul(a.act, hp + n0, up + n0, n1 - n0, hp + n0);
      r += n1 - n0;
    }
  });
  // Phase 2: per output row range of token t, the k down projections and their weighted sum, in slot
  // order (the grouped path reduces in the same order).
  MoeGemvInput hd;
  moe_prep(h.get(), P, a.down, hd);
  std::unique_ptr<float[]> yd(new float[size_t(P * H)]);
  parallel_for(T * H, moe_grain(moe_row_bytes(a.down) * k), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1;) {
      const int64_t t = r / H, n0 = r % H;
      const int64_t n1 = n0 + (r1 - r) < H ? n0 + (r1 - r) : H;
      float* o = a.out + t * H;
      for (int64_t n = n0; n < n1; n++) o[n] = 0.f;
      for (int64_t j = 0; j < k; j++) {
        const int64_t p = t * k + j;
        float* y = yd.get() + p * H;
        moe_gemv_rows(hd, p, ex.down(a.ids[p]), y, n0, n1);
        const float wj = a.weights[p];
        for (int64_t n = n0; n < n1; n++) o[n] += wj * y[n];
      }
      r += n1 - n0;
    }
  });
}

// Pairs per grouped chunk: bounds the scratch (sorted x, gate/up, h, expert outputs) to ~256 MB while
// keeping chunks large enough that each expert gets many rows per GEMM.
static int64_t moe_chunk_pairs(const MoeArgs& a) {
  const int64_t per_pair = (2 * a.H + 3 * a.I) * 4;
  int64_t c = (int64_t(256) << 20) / per_pair;
  c -= c % a.k;
  return c < a.k ? a.k : c;
}

static void moe_grouped_chunk(const MoeArgs& a, int64_t t0, int64_t t1) {
  const MoeExperts ex{a};
  const int64_t H = a.H, I = a.I, k = a.k, E = a.E, P = (t1 - t0) * k;
  const int32_t* ids = a.ids + t0 * k;
  // Counting sort of pairs by expert, stable (token order within an expert): start[e] is the first
  // sorted slot of expert e, pos[p] the sorted slot of pair p.
  std::unique_ptr<int64_t[]> start(new int64_t[size_t(E + 1)]()), fill(new int64_t[size_t(E)]());
  std::unique_ptr<int64_t[]> pos(new int64_t[size_t(P)]);
  for (int64_t p = 0; p < P; p++) start[ids[p] + 1]++;
  for (int64_t e = 0; e < E; e++) start[e + 1] += start[e];
  for (int64_t p = 0; p < P; p++) pos[p] = start[ids[p]] + fill[ids[p]]++;

  std::unique_ptr<float[]> xs(new float[size_t(P * H)]);
  parallel_for(P, 64, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p++) std::memcpy(xs.get() + pos[p] * H, a.x + (t0 + p / k) * H, size_t(H) * 4);
  });
  // Gate and up for each expert's rows: one GEMM over the fused [2I, H] block, or two.
  const int64_t GW = a.fused ? 2 * I : I;
  std::unique_ptr<float[]> g(new float[size_t(P * GW)]);
  std::unique_ptr<float[]> u(a.fused ? nullptr : new float[size_t(P * I)]);
  for (int64_t e = 0; e < E; e++) {
    const int64_t c = start[e + 1] - start[e];
    if (c == 0) continue;
    const float* xe = xs.get() + start[e] * H;
    if (a.fused) {
      matmul(xe, c, moe_row_view(a.gate, 2 * I * e, 2 * I), nullptr, g.get() + start[e] * GW);
    } else {
      matmul(xe, c, ex.gate(int(e)), nullptr, g.get() + start[e] * I);
      matmul(xe, c, ex.up(int(e)), nullptr, u.get() + start[e] * I);
    }
  }
  // h = act(gate) * up, written over the gate rows (in place for split, compacted for fused).
  std::unique_ptr<float[]> hbuf(a.fused ? new float[size_t(P * I)] : nullptr);
  float* h = a.fused ? hbuf.get() : g.get();
  parallel_for(P, 16, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; s++) {
      const float* gs = g.get() + s * GW;
      const float* us = a.fused ? gs + I : u.get() + s * I;
      moe_act_mul(a.act, gs, us, I, h + s * I);
    }
  });
  u.reset();
  std::unique_ptr<float[]> ys(new float[size_t(P * H)]);
  for (int64_t e = 0; e < E; e++) {
    const int64_t c = start[e + 1] - start[e];
    if (c > 0) matmul(h + start[e] * I, c, ex.down(int(e)), nullptr, ys.get() + start[e] * H);
  }
  // Weighted unsort-and-reduce straight into the output rows, slot order as in the gather path.
  parallel_for(t1 - t0, 8, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) {
      float* o = a.out + (t0 + i) * H;
      for (int64_t n = 0; n < H; n++) o[n] = 0.f;
      for (int64_t j = 0; j < k; j++) {
        const float wj = a.weights[(t0 + i) * k + j];
        const float* y = ys.get() + pos[i * k + j] * H;
        int64_t n = 0;
        for (; n + VL <= H; n += VL) vstore(o + n, vload(o + n) + wj * vload(y + n));
        for (; n < H; n++) o[n] += wj * y[n];
      }
    }
  });
}

static void moe_grouped(const MoeArgs& a) {
  const int64_t step = moe_chunk_pairs(a) / a.k;
  for (int64_t t0 = 0; t0 < a.T; t0 += step) moe_grouped_chunk(a, t0, t0 + step < a.T ? t0 + step : a.T);
}

static void moe_switch_glu(const MoeArgs& a) {
  if (a.path == kMoeGather) moe_gather(a);
  else moe_grouped(a);
}
