// ---- Transposed-x GEMM (included by kernels_impl.h inside the variant namespace) ----
// matmul's prefill kernel for f32 weights (M > kGemvMaxM), which it reads in place; weights that
// need decoding go to the dot-form kernel of gemm_dot.h, measured faster for them. The small operand,
// x, is packed once per call, transposed into tiles of MW = 2 * VL rows ([k][MW] per tile); the weight
// is never transposed or copied. A micro-kernel then broadcasts one weight element per row and
// multiplies it into two x vectors (MW rows of x), NR weight rows at a time, keeping NR x 2 vector
// accumulators: per k, 2 vector loads + NR broadcasts for 2 * NR FMAs.
// (An earlier version packed every weight panel transposed, one scalar store per element, which cost as
// much as the arithmetic for prompts of a few dozen tokens; x is 1-2 orders of magnitude smaller than
// the weight, so transposing it instead is almost free.)

constexpr int kXtMW = 2 * VL;         // rows of x per tile (two vectors)
constexpr int kXtNR = 6;              // weight rows per micro-kernel call: 12 accumulators
constexpr int kXtPanel = 4 * kXtNR;   // weight rows per task unit
constexpr int64_t kXtKBlock = 256;    // K per block: 24 rows x 256 x 4 B = 24 KB of W per pass

// Packs x into tiles: xt[(t * K + k) * MW + l] = x[t * MW + l, k]; rows past M are zero.
static void xt_pack(const float* x, int64_t M, int64_t K, float* xt) {
  const int64_t tiles = (M + kXtMW - 1) / kXtMW;
  parallel_for(tiles, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++)
      for (int l = 0; l < kXtMW; l++) {
        const int64_t m = t * kXtMW + l;
        float* dst = xt + t * K * kXtMW + l;
        if (m >= M) {
          for (int64_t k = 0; k < K; k++) dst[k * kXtMW] = 0.f;
          continue;
        }
        const float* src = x + m * K;
        for (int64_t k = 0; k < K; k++) dst[k * kXtMW] = src[k];
      }
  });
}

// out[j][l] = sum_{k < kc} wr[j][k] * xt[k][l] for NR weight rows.
template <int NR>
static inline void xt_micro(const float* xt, const float* const* wr, int64_t kc, float (*out)[kXtMW]) {
  vf acc[NR][2];
  for (int j = 0; j < NR; j++) acc[j][0] = acc[j][1] = vsplat(0.f);
  for (int64_t k = 0; k < kc; k++) {
    const vf x0 = vload(xt + k * kXtMW), x1 = vload(xt + k * kXtMW + VL);
    for (int j = 0; j < NR; j++) {
      const vf wv = vsplat(wr[j][k]);
      acc[j][0] += wv * x0;
      acc[j][1] += wv * x1;
    }
  }
  for (int j = 0; j < NR; j++) {
    vstore(out[j], acc[j][0]);
    vstore(out[j] + VL, acc[j][1]);
  }
}

// The same for a tile with at most VL valid rows (the last tile of a short prompt: M = 9 would
// otherwise pay for 2 * VL rows of arithmetic).
template <int NR>
static inline void xt_micro_half(const float* xt, const float* const* wr, int64_t kc, float (*out)[kXtMW]) {
  vf acc[NR];
  for (int j = 0; j < NR; j++) acc[j] = vsplat(0.f);
  for (int64_t k = 0; k < kc; k++) {
    const vf x0 = vload(xt + k * kXtMW);
    for (int j = 0; j < NR; j++) acc[j] += vsplat(wr[j][k]) * x0;
  }
  for (int j = 0; j < NR; j++) vstore(out[j], acc[j]);
}

// One micro-kernel call: nr weight rows against a tile of x (mv valid rows).
static inline void xt_tile(int nr, int mv, const float* xt, const float* const* wr, int64_t kc,
                           float (*out)[kXtMW]) {
  if (mv <= VL) {
    switch (nr) {
      case 6: xt_micro_half<6>(xt, wr, kc, out); break;
      case 5: xt_micro_half<5>(xt, wr, kc, out); break;
      case 4: xt_micro_half<4>(xt, wr, kc, out); break;
      case 3: xt_micro_half<3>(xt, wr, kc, out); break;
      case 2: xt_micro_half<2>(xt, wr, kc, out); break;
      default: xt_micro_half<1>(xt, wr, kc, out); break;
    }
    return;
  }
  switch (nr) {
    case 6: xt_micro<6>(xt, wr, kc, out); break;
    case 5: xt_micro<5>(xt, wr, kc, out); break;
    case 4: xt_micro<4>(xt, wr, kc, out); break;
    case 3: xt_micro<3>(xt, wr, kc, out); break;
    case 2: xt_micro<2>(xt, wr, kc, out); break;
    default: xt_micro<1>(xt, wr, kc, out); break;
  }
}

// y[M, N] = x[M, K] . W^T (+ bias) for an f32 weight W [N, K].
static void gemm_f32(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y) {
  const int64_t K = w.cols, N = w.rows;
  static thread_local Scratch s_xt;  // the calling thread's; workers only read it
  float* xt = s_xt.get<float>(size_t(((M + kXtMW - 1) / kXtMW) * kXtMW * K));
  xt_pack(x, M, K, xt);
  const int64_t tiles = (M + kXtMW - 1) / kXtMW;
  const int64_t kb = kXtKBlock;
  const float* wf = reinterpret_cast<const float*>(w.data);
  const int64_t panels = (N + kXtPanel - 1) / kXtPanel;
  parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
    float out[kXtNR][kXtMW];
    for (int64_t p = p0; p < p1; p++) {
      const int64_t n0 = p * kXtPanel;
      const int np = int(std::min<int64_t>(kXtPanel, N - n0));
      for (int64_t m = 0; m < M; m++)
        for (int j = 0; j < np; j++) y[m * N + n0 + j] = bias ? bias[n0 + j] : 0.f;
      for (int64_t k0 = 0; k0 < K; k0 += kb) {
        const int64_t kc = std::min<int64_t>(kb, K - k0);
        const float* wr[kXtPanel];
        for (int j = 0; j < np; j++) wr[j] = wf + (n0 + j) * K + k0;
        for (int64_t t = 0; t < tiles; t++) {
          const float* xb = xt + (t * K + k0) * kXtMW;
          const int64_t m0 = t * kXtMW;
          const int mv = int(std::min<int64_t>(kXtMW, M - m0));
          for (int j = 0; j < np; j += kXtNR) {
            const int nr = std::min(kXtNR, np - j);
            xt_tile(nr, mv, xb, wr + j, kc, out);
            for (int l = 0; l < mv; l++) {
              float* yr = y + (m0 + l) * N + n0 + j;
              for (int jj = 0; jj < nr; jj++) yr[jj] += out[jj][l];
            }
          }
        }
      }
    }
  });
}
