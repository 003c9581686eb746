// GEMV over float weights (f32/f16/bf16), and its row-range entry point for the MoE kernels.
// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

// 2*VL float weights of a row from element k. BF16 yields (even elements, odd elements) of the block
// with one shift and one mask (x must be permute_pairs'd); F32/F16 yield the two halves in order.
template <int DT, bool PAIRS = true>
static inline void wload2(const uint8_t* row, int64_t k, vf& w0, vf& w1) {
  if (DT == kBF16 && !PAIRS) {
    w0 = load_bf16(row + 2 * k);
    w1 = load_bf16(row + 2 * k + 2 * VL);
  } else if (DT == kF32) {
    w0 = vload(reinterpret_cast<const float*>(row) + k);
    w1 = vload(reinterpret_cast<const float*>(row) + k + VL);
  } else if (DT == kBF16) {
    vu u;
    std::memcpy(&u, row + 2 * k, sizeof u);
    w0 = as_f(u << 16);
    w1 = as_f(u & 0xffff0000u);
  } else {
    w0 = load_f16(row + 2 * k);
    w1 = load_f16(row + 2 * k + 2 * VL);
  }
}

// GEMV tile over float weights: rows [n, n + R) of W against MB rows of x. xs is x as the weight layout
// wants it (permute_pairs'd for BF16 when PAIRS); x is the original, used for the tail.
template <int DT, int MB, int R, bool PAIRS = true>
static void gemv_float_tile(const float* xs, const float* x, int64_t K, const WeightRef& w, const float* bias,
                            float* y, int64_t N, int64_t n) {
  constexpr int64_t esz = DT == kF32 ? 4 : 2;
  const uint8_t* rows[R];
  for (int r = 0; r < R; r++) rows[r] = w.data + (n + r) * K * esz;
  vf acc[R][MB][2];
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) acc[r][m][0] = acc[r][m][1] = vsplat(0.f);
  TilePrefetch pref(rows[0], gemv_prefetch_distance(R, K * esz));
  int64_t k = 0;
  for (; k + 2 * VL <= K; k += 2 * VL) {
    vf xa[MB], xb[MB];
    for (int m = 0; m < MB; m++) {
      xa[m] = vload(xs + m * K + k);
      xb[m] = vload(xs + m * K + k + VL);
    }
    pref.advance(R * 2 * VL * esz);
    for (int r = 0; r < R; r++) {
      vf w0, w1;
      wload2<DT, PAIRS>(rows[r], k, w0, w1);
      for (int m = 0; m < MB; m++) {
        acc[r][m][0] += w0 * xa[m];
        acc[r][m][1] += w1 * xb[m];
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) {
      float s = hsum(acc[r][m][0] + acc[r][m][1]);
      for (int64_t kk = k; kk < K; kk++) s += load_scalar(rows[r], DT, kk) * x[m * K + kk];
      y[m * N + n + r] = bias ? s + bias[n + r] : s;
    }
}

// Row-range entry point for other kernels (moe_impl.h): rows [n0, n1) of W against MB rows of x (as is),
// y indexed by absolute row.
template <int MB>
static void gemv_float_rows(const float* x, int64_t K, const WeightRef& w, const float* bias, float* y, int64_t N,
                            int64_t n0, int64_t n1) {
  constexpr int R = GemvRows<MB>::R;
  auto run = [&](auto dt) {
    constexpr int DT = decltype(dt)::value;
    row_tiles<R>(n0, n1, [&](int64_t n) { gemv_float_tile<DT, MB, R, false>(x, x, K, w, bias, y, N, n); },
                 [&](int64_t n) { gemv_float_tile<DT, MB, 1, false>(x, x, K, w, bias, y, N, n); });
  };
  if (w.dtype == kBF16) run(std::integral_constant<int, kBF16>());
  else if (w.dtype == kF16) run(std::integral_constant<int, kF16>());
  else run(std::integral_constant<int, kF32>());
}
