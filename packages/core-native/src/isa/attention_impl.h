// Attention kernels, included into kernels_impl.h inside the variant namespace (MLX_NS), so the
// vector helpers (vf, vload, load_any, vexp, ...) of that file are in scope.
// Not a standalone header: no include guard on purpose.

// ---------------------------------------------------------------------------------------------
// Attention: one task per (query row, head); keys processed in blocks with an online softmax in f32.

static void attention(const AttentionArgs& a) {
  const int D = a.head_dim, DV = a.v_dim;
  const int group = a.n_heads / a.n_kv_heads;
  const int esz = a.kv_dtype == kF32 ? 4 : 2;
  const int64_t tasks = a.n_q * a.n_heads;
  constexpr int BK = 32;
  parallel_for(tasks, 1, [&](int64_t t0, int64_t t1) {
    std::unique_ptr<float[]> acc(new float[size_t(DV)]);
    std::unique_ptr<float[]> kf(new float[size_t(D)]);
    float sc[BK];
    int64_t idx[BK];
    for (int64_t task = t0; task < t1; task++) {
      const int64_t i = task / a.n_heads;
      const int h = int(task % a.n_heads);
      const int kvh = h / group;
      const float* q = a.q + (i * a.n_heads + h) * D;
      const int64_t qp = a.q_pos[i];
      const uint8_t* mrow = a.mask ? a.mask + ((a.mask_heads == 1 ? 0 : h) * a.n_q + i) * a.n_kv : nullptr;
      float m = -INFINITY, l = 0.f;
      for (int d = 0; d < DV; d++) acc[d] = 0.f;
      for (int64_t j0 = 0; j0 < a.n_kv; j0 += BK) {
        const int64_t j1 = std::min<int64_t>(a.n_kv, j0 + BK);
        int cnt = 0;
        float bm = -INFINITY;
        for (int64_t j = j0; j < j1; j++) {
          const int64_t kp = a.k_pos[j];
          if (kp < 0) continue;
          if (a.causal && kp > qp) continue;
          if (a.window > 0 && qp - kp >= a.window) continue;
          if (mrow && !mrow[j]) continue;
          const uint8_t* kr = a.k + (j * a.n_kv_heads + kvh) * int64_t(D) * esz;
          vf dv = vsplat(0.f);
          int d = 0;
          for (; d + VL <= D; d += VL) dv += vload(q + d) * load_any(kr, a.kv_dtype, d);
          float s = hsum(dv);
          for (; d < D; d++) s += q[d] * load_scalar(kr, a.kv_dtype, d);
          s *= a.scale;
          if (a.softcap > 0.f) s = a.softcap * std::tanh(s / a.softcap);
          sc[cnt] = s;
          idx[cnt] = j;
          cnt++;
          bm = s > bm ? s : bm;
        }
        if (cnt == 0) continue;
        const float nm = bm > m ? bm : m;
        const float corr = m == -INFINITY ? 0.f : std::exp(m - nm);
        if (corr != 1.f) {
          for (int d = 0; d < DV; d++) acc[d] *= corr;
          l *= corr;
        }
        m = nm;
        for (int c = 0; c < cnt; c++) {
          const float p = std::exp(sc[c] - m);
          l += p;
          const uint8_t* vr = a.v + (idx[c] * a.n_kv_heads + kvh) * int64_t(DV) * esz;
          int d = 0;
          for (; d + VL <= DV; d += VL) vstore(acc.get() + d, vload(acc.get() + d) + p * load_any(vr, a.kv_dtype, d));
          for (; d < DV; d++) acc[d] += p * load_scalar(vr, a.kv_dtype, d);
        }
      }
      float* o = a.out + (i * a.n_heads + h) * DV;
      const float inv = l > 0.f ? 1.0f / l : 0.f;  // a query that sees nothing outputs zeros, never NaN
      for (int d = 0; d < DV; d++) o[d] = acc[d] * inv;
    }
  });
}

