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

// 64-byte aligned f32 scratch. Row lengths are multiples of the vector width in the hot paths, so
// aligned bases keep full-vector loads from straddling cache lines (a split load costs two).
class MoeBuf {
 public:
  MoeBuf() = default;
  explicit MoeBuf(int64_t n) { reset(n); }
  void reset(int64_t n = 0) {
    raw_.reset(n > 0 ? new float[size_t(n) + 16] : nullptr);
    p_ = n > 0 ? reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(raw_.get()) + 63) & ~uintptr_t(63)) : nullptr;
  }
  float* get() const { return p_; }
  float& operator[](int64_t i) const { return p_[i]; }

 private:
  std::unique_ptr<float[]> raw_;
  float* p_ = nullptr;
};

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

// Rows of activations prepared for the single-row GEMV kernels of gemv_float.h / gemv_quant.h: the
// 4-bit fast path reads x permuted (permute_for_q4) and every quantized path needs per-group sums of x.
// Built once per call, not once per (pair, row block).
struct MoeGemvInput {
  MoeBuf xp, xsum;
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
    in.xp.reset(rows * K);
    for (int64_t r = 0; r < rows; r++) permute_for_q4(x + r * K, K, in.xp.get() + r * K);
    in.xs = in.xp.get();
  }
  in.xsum.reset(rows * in.gpr);
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
  MoeBuf h(P * I), u(P * I);
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
  MoeBuf yd(P * H);
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

// ---------------------------------------------------------------------------------------------
// Grouped GEMM: y[m, n] = x[m, :] . W[n, :] for several (x block, expert weight) jobs in one parallel
// region, on the dot-form GEMM kernel of gemm_dot.h.

constexpr int64_t kGemvRowsMax = 2 * kGemvBlock;    // jobs this small run as GEMV tasks

struct MoeGemmJob {
  const float* x;  // [m, K], permuted when moe_gemm_permutes(w)
  const float* xn; // the same rows in natural order (for the GEMV fallback)
  int64_t m;
  WeightRef w;     // [N, K]
  float* y;        // [m, N]
};

static inline bool moe_gemm_permutes(const WeightRef& w) { return decodes_pair_permuted(w); }

// y[r, n] for rows r in [r0, r0 + mb) (mb <= 4) and n in [n0, n1): matmul's GEMV kernels, which read
// each weight row once for up to 4 activation rows.
static void moe_gemv_multi(const MoeGemvInput& in, int64_t r0, int mb, const WeightRef& w, float* y, int64_t n0, int64_t n1) {
  const int64_t K = in.K, N = w.rows;
  const float* x = in.xs + r0 * K;
  float* yr = y + r0 * N;
  if (w.dtype != kQAffine) {
    switch (mb) {
      case 4: gemv_float_rows<4>(x, K, w, nullptr, yr, N, n0, n1); break;
      case 3: gemv_float_rows<3>(x, K, w, nullptr, yr, N, n0, n1); break;
      case 2: gemv_float_rows<2>(x, K, w, nullptr, yr, N, n0, n1); break;
      default: gemv_float_rows<1>(x, K, w, nullptr, yr, N, n0, n1); break;
    }
    return;
  }
  const float* xs = in.xsum.get() + r0 * in.gpr;
#define MLX_MOE_GEMV_Q(SD)                                                        \
  switch (mb) {                                                                   \
    case 4: gemv_q_rows<4, SD>(x, xs, K, w, nullptr, yr, N, n0, n1); break;       \
    case 3: gemv_q_rows<3, SD>(x, xs, K, w, nullptr, yr, N, n0, n1); break;       \
    case 2: gemv_q_rows<2, SD>(x, xs, K, w, nullptr, yr, N, n0, n1); break;       \
    default: gemv_q_rows<1, SD>(x, xs, K, w, nullptr, yr, N, n0, n1); break;      \
  }
  if (w.scale_dtype == kBF16) { MLX_MOE_GEMV_Q(kBF16) }
  else if (w.scale_dtype == kF16) { MLX_MOE_GEMV_Q(kF16) }
  else { MLX_MOE_GEMV_Q(kF32) }
#undef MLX_MOE_GEMV_Q
}

// Runs every job in one parallel region. Jobs of more than kGemvRowsMax rows are split into
// (column block, row block) GEMM tasks; smaller ones into column blocks of GEMV over all their rows
// (reading the weight once per 4 rows beats dequantizing it into a buffer), so a step where many
// experts get one or two tokens each is still one region, not one per expert.
static void moe_gemm_jobs(const MoeGemmJob* jobs, int64_t njobs) {
  std::unique_ptr<int64_t[]> first(new int64_t[size_t(njobs + 1)]), mblocks(new int64_t[size_t(njobs)]), cols(new int64_t[size_t(njobs)]);
  std::unique_ptr<MoeGemvInput[]> prep(new MoeGemvInput[size_t(njobs)]);
  first[0] = 0;
  for (int64_t i = 0; i < njobs; i++) {
    const MoeGemmJob& j = jobs[i];
    if (j.m > kGemvRowsMax) {
      mblocks[i] = (j.m + kDotMB - 1) / kDotMB;
      cols[i] = kDotNB;
    } else {
      mblocks[i] = 1;
      cols[i] = moe_grain(moe_row_bytes(j.w));
      if (j.m > 0) moe_prep(j.xn, j.m, j.w, prep[i]);
    }
    const int64_t nblk = j.m > 0 ? (j.w.rows + cols[i] - 1) / cols[i] : 0;
    first[i + 1] = first[i] + nblk * mblocks[i];
  }
  if (first[njobs] == 0) return;
  parallel_for(first[njobs], 1, [&](int64_t t0, int64_t t1) {
    DotGemmScratch& scratch = dot_scratch();
    int64_t i = 0;
    for (int64_t t = t0; t < t1; t++) {
      while (first[i + 1] <= t) i++;
      const MoeGemmJob& j = jobs[i];
      const int64_t local = t - first[i], mbk = mblocks[i];
      const int64_t nbk = local / mbk, mbi = local % mbk;
      const int64_t n0 = nbk * cols[i], n1 = n0 + cols[i] < j.w.rows ? n0 + cols[i] : j.w.rows;
      if (j.m <= kGemvRowsMax) {
        for (int64_t r = 0; r < j.m; r += 4) moe_gemv_multi(prep[i], r, int(j.m - r < 4 ? j.m - r : 4), j.w, j.y, n0, n1);
        continue;
      }
      int64_t m0, m1;
      dot_gemm_rows(j.m, mbk, mbi, m0, m1);
      if (m0 < m1) dot_gemm_task(DotGemmJob{j.x, j.m, j.w, j.y}, m0, m1, n0, n1, scratch.w(), scratch.a());
    }
  });
}

// x rows as a GEMM job for w reads them: permuted copy when w is a fast-path 4-bit weight.
static const float* moe_rows_for(const WeightRef& w, const float* x, int64_t rows, int64_t K, MoeBuf& holder) {
  if (!moe_gemm_permutes(w)) return x;
  holder.reset(rows * K);
  for (int64_t r = 0; r < rows; r++) permute_for_q4(x + r * K, K, holder.get() + r * K);
  return holder.get();
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

  MoeBuf xs(P * H);
  parallel_for(P, 64, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p++) std::memcpy(xs.get() + pos[p] * H, a.x + (t0 + p / k) * H, size_t(H) * 4);
  });
  MoeBuf xg_hold, xu_hold;
  const float* xg = moe_rows_for(a.gate, xs.get(), P, H, xg_hold);
  const float* xu = moe_gemm_permutes(ex.up_all()) == moe_gemm_permutes(a.gate) ? xg : moe_rows_for(ex.up_all(), xs.get(), P, H, xu_hold);

  // Gate and up for every expert's rows in one batch of jobs: one job over the fused [2I, H] block, or two.
  const int64_t GW = a.fused ? 2 * I : I;
  MoeBuf g(P * GW);
  MoeBuf u(a.fused ? 0 : P * I);
  std::unique_ptr<MoeGemmJob[]> jobs(new MoeGemmJob[size_t(2 * E)]);
  int64_t nj = 0;
  for (int64_t e = 0; e < E; e++) {
    const int64_t c = start[e + 1] - start[e], s0 = start[e];
    if (c == 0) continue;
    if (a.fused) {
      jobs[nj++] = {xg + s0 * H, xs.get() + s0 * H, c, moe_row_view(a.gate, 2 * I * e, 2 * I), g.get() + s0 * GW};
    } else {
      jobs[nj++] = {xg + s0 * H, xs.get() + s0 * H, c, ex.gate(int(e)), g.get() + s0 * I};
      jobs[nj++] = {xu + s0 * H, xs.get() + s0 * H, c, ex.up(int(e)), u.get() + s0 * I};
    }
  }
  moe_gemm_jobs(jobs.get(), nj);
  xs.reset();
  xg_hold.reset();
  xu_hold.reset();

  // h = act(gate) * up, written over the gate rows (in place for split, compacted for fused).
  MoeBuf hbuf(a.fused ? P * I : 0);
  float* h = a.fused ? hbuf.get() : g.get();
  parallel_for(P, 16, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; s++) {
      const float* gs = g.get() + s * GW;
      const float* us = a.fused ? gs + I : u.get() + s * I;
      moe_act_mul(a.act, gs, us, I, h + s * I);
    }
  });
  u.reset();
  MoeBuf hp_hold;
  const float* hp = moe_rows_for(a.down, h, P, I, hp_hold);
  MoeBuf ys(P * H);
  nj = 0;
  for (int64_t e = 0; e < E; e++) {
    const int64_t c = start[e + 1] - start[e], s0 = start[e];
    if (c > 0) jobs[nj++] = {hp + s0 * I, h + s0 * I, c, ex.down(int(e)), ys.get() + s0 * H};
  }
  moe_gemm_jobs(jobs.get(), nj);

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
