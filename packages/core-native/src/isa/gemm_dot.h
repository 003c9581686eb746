// ---- Dot-product-form GEMM (included by kernels_impl.h inside the variant namespace) ----
// y[m, n] = x[m, :] . W[n, :] as MR x NR tiles of vector dot products along k: a micro-kernel keeps
// MR x NR vector accumulators, reading x rows and W rows as stored along k. W rows are decoded (vector
// decodes) a k-chunk at a time into an aligned L1 buffer, so no transpose is needed; 4-bit rows decode
// to the pair-permuted order (decodes_pair_permuted) and x must be permuted the same way. Vector partial
// sums live in a per-task buffer across k-chunks and are reduced once at the end. On AVX-512 the 4x4
// micro-kernel (8 loads, 16 FMAs per step) runs near FMA peak.
// Used by matmul for M > kGemvMaxM with non-f32 weights (measured faster there than the
// transposed-x kernel of gemm_xt.h: 4096x4096 q4 at M = 16 / 64 / 256: 278 / 349 / 370 GFLOP/s vs
// 191 / 304 / 334) and by the MoE grouped GEMM (moe_impl.h), one task per (row block, weight block).

constexpr int kDotMR = VL >= 16 ? 4 : 3;            // x rows per micro-kernel (register budget:
constexpr int kDotNR = VL >= 16 ? 4 : 3;            // MR*NR accumulators + NR + 1 live vectors)
constexpr int64_t kDotNB = 4 * kDotNR;              // W rows per task
constexpr int64_t kDotKC = 512;                     // k per chunk (multiple of every group size)
constexpr int64_t kDotMB = 128;                     // max x rows per task

struct DotGemmJob {
  const float* x;  // [m, K], pair-permuted when decodes_pair_permuted(w)
  int64_t m;
  WeightRef w;     // [N, K]
  float* y;        // [m, N]
};

// acc[m][n] (VL floats each, row stride NBv vectors) += x rows . W rows over kv (a multiple of VL).
template <int MR, int NR>
static void dot_micro(const float* const* xr, const float* const* wr, int64_t kv, float* acc, int64_t ld) {
  vf a[MR][NR];
  for (int m = 0; m < MR; m++)
    for (int n = 0; n < NR; n++) a[m][n] = vload(acc + (m * ld + n) * VL);
  for (int64_t k = 0; k < kv; k += VL) {
    vf wv[NR];
    for (int n = 0; n < NR; n++) wv[n] = vload(wr[n] + k);
    for (int m = 0; m < MR; m++) {
      const vf xv = vload(xr[m] + k);
      for (int n = 0; n < NR; n++) a[m][n] += xv * wv[n];
    }
  }
  for (int m = 0; m < MR; m++)
    for (int n = 0; n < NR; n++) vstore(acc + (m * ld + n) * VL, a[m][n]);
}

template <int MR>
static void dot_micro_n(int nr, const float* const* xr, const float* const* wr, int64_t kv, float* acc, int64_t ld) {
  switch (nr) {
    case 4: if constexpr (kDotNR >= 4) { dot_micro<MR, 4>(xr, wr, kv, acc, ld); } break;
    case 3: dot_micro<MR, 3>(xr, wr, kv, acc, ld); break;
    case 2: dot_micro<MR, 2>(xr, wr, kv, acc, ld); break;
    default: dot_micro<MR, 1>(xr, wr, kv, acc, ld); break;
  }
}

static void dot_block(int mr, int nr, const float* const* xr, const float* const* wr, int64_t kv, float* acc, int64_t ld) {
  switch (mr) {
    case 4: if constexpr (kDotMR >= 4) { dot_micro_n<4>(nr, xr, wr, kv, acc, ld); } break;
    case 3: dot_micro_n<3>(nr, xr, wr, kv, acc, ld); break;
    case 2: dot_micro_n<2>(nr, xr, wr, kv, acc, ld); break;
    default: dot_micro_n<1>(nr, xr, wr, kv, acc, ld); break;
  }
}

// One task: rows [m0, m1) of job j against W rows [n0, n1).
static void dot_gemm_task(const DotGemmJob& j, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float* wbuf, float* acc) {
  const WeightRef& w = j.w;
  const int64_t K = w.cols, N = w.rows, nb = n1 - n0, mb = m1 - m0;
  const int64_t ld = kDotNB;  // acc row stride in vectors
  for (int64_t i = 0; i < mb * ld * VL; i++) acc[i] = 0.f;
  const float* wr[kDotNB];
  for (int64_t k0 = 0; k0 < K; k0 += kDotKC) {
    const int64_t kn = k0 + kDotKC < K ? kDotKC : K - k0;
    const int64_t kv = kn - kn % VL;
    for (int64_t n = 0; n < nb; n++) {
      decode_row_block(w, n0 + n, k0, kn, wbuf + n * kDotKC);
      wr[n] = wbuf + n * kDotKC;
    }
    for (int64_t m = 0; m < mb; m += kDotMR) {
      const int mr = int(mb - m < kDotMR ? mb - m : kDotMR);
      const float* xr[kDotMR];
      for (int r = 0; r < mr; r++) xr[r] = j.x + (m0 + m + r) * K + k0;
      for (int64_t n = 0; n < nb; n += kDotNR) {
        const int nr = int(nb - n < kDotNR ? nb - n : kDotNR);
        float* ac = acc + (m * ld + n) * VL;
        dot_block(mr, nr, xr, wr + n, kv, ac, ld);
        if (kv < kn)  // odd K (float weights only): the scalar tail goes into lane 0
          for (int r = 0; r < mr; r++)
            for (int c = 0; c < nr; c++) {
              float t = 0.f;
              for (int64_t k = kv; k < kn; k++) t += xr[r][k] * wr[n + c][k];
              ac[(r * ld + c) * VL] += t;
            }
      }
    }
  }
  for (int64_t m = 0; m < mb; m++)
    for (int64_t n = 0; n < nb; n++) j.y[(m0 + m) * N + n0 + n] = hsum(vload(acc + (m * ld + n) * VL));
}

// Rows [m0, m1) of row block mbi out of mbk (balanced, multiples of MR rather than full blocks plus a
// ragged remainder) of a job of m rows.
static inline void dot_gemm_rows(int64_t m, int64_t mbk, int64_t mbi, int64_t& m0, int64_t& m1) {
  int64_t per = (m + mbk - 1) / mbk;
  per = (per + kDotMR - 1) / kDotMR * kDotMR;
  m0 = mbi * per;
  m1 = m0 + per < m ? m0 + per : m;
}

// Per-thread scratch of a task: the decoded W block and the vector accumulators. One per thread,
// shared by the dense GEMM and the MoE grouped GEMM.
struct DotGemmScratch {
  Scratch wbuf, acc;
  float* w() { return wbuf.get<float>(size_t(kDotNB * kDotKC)); }
  float* a() { return acc.get<float>(size_t((kDotMB + kDotMR) * kDotNB * VL)); }  // + MR: blocks round up to MR
};
static inline DotGemmScratch& dot_scratch() {
  static thread_local DotGemmScratch s;
  return s;
}

// Dense entry: y[M, N] = x[M, K] . W^T (+ bias) on the dot-form kernel.
static void gemm_dot(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y) {
  const int64_t K = w.cols, N = w.rows;
  const float* xd = x;
  static thread_local Scratch s_xp;  // the calling thread's; workers only read it
  if (decodes_pair_permuted(w)) {
    float* xp = s_xp.get<float>(size_t(M * K));
    parallel_for(M, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) permute_pairs(x + r * K, K, xp + r * K);
    });
    xd = xp;
  }
  const DotGemmJob job{xd, M, w, y};
  const int64_t mbk = (M + kDotMB - 1) / kDotMB, nbk = (N + kDotNB - 1) / kDotNB;
  parallel_for(mbk * nbk, 1, [&](int64_t t0, int64_t t1) {
    DotGemmScratch& s = dot_scratch();
    for (int64_t t = t0; t < t1; t++) {
      const int64_t n0 = (t / mbk) * kDotNB, n1 = n0 + kDotNB < N ? n0 + kDotNB : N;
      int64_t m0, m1;
      dot_gemm_rows(M, mbk, t % mbk, m0, m1);
      if (m0 >= m1) continue;
      dot_gemm_task(job, m0, m1, n0, n1, s.w(), s.a());
      if (bias)
        for (int64_t m = m0; m < m1; m++)
          for (int64_t n = n0; n < n1; n++) y[m * N + n] += bias[n];
    }
  });
}
