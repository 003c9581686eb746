// GEMV dispatch (M <= kGemvMaxM rows of x): picks the integer-dot path of this ISA where the weight
// allows it, else the f32 paths of gemv_quant.h / gemv_float.h, and splits rows over the thread pool.
// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

template <int MB>
static void gemv_block(const float* x, const WeightRef& w, const float* bias, float* y) {
  constexpr int R = GemvRows<MB>::R;
  const int64_t K = w.cols, N = w.rows;
  static thread_local Scratch s_xp, s_xsum;
  const bool quant = w.dtype == kQAffine;
  const int64_t gpr = quant ? K / w.group : 0;
  bool vnni = false;  // the integer-dot path runs (VNNI, the AVX2 q4 path or NEON SDOT, below)
  const int8_t* planes = nullptr;
  const float* sx = nullptr;
#if defined(__AVX512VNNI__) && MLX_VL == 16
  static thread_local Scratch s_planes, s_sx;
  if (quant && ((w.bits == 4 && K % 128 == 0) || (w.bits == 8 && K % 64 == 0))) {
    int8_t* pl = s_planes.get<int8_t>(size_t(MB * K * 3));
    float* sc = s_sx.get<float>(size_t(MB * gpr));
    vnni = true;
    for (int m = 0; m < MB && vnni; m++)
      vnni = vnni_prepare(x + m * K, K, w.group, w.bits, pl + m * K * 3, sc + m * gpr);
    planes = pl;
    sx = sc;
  }
#elif defined(__AVX2__) && MLX_VL == 8
  static thread_local Scratch s_planes, s_sx;
  if (quant && w.bits == 4 && K % kQ4Chunk == 0 && (w.group == 32 || w.group == 64 || w.group == 128)) {
    int8_t* pl = s_planes.get<int8_t>(size_t(MB * K * 3));
    float* sc = s_sx.get<float>(size_t(MB * gpr));
    vnni = true;
    for (int m = 0; m < MB && vnni; m++) vnni = avx2_q4_prepare(x + m * K, K, w.group, pl + m * K * 3, sc + m * gpr);
    planes = pl;
    sx = sc;
  }
#elif defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4
  static thread_local Scratch s_planes, s_sx;
  if (quant && (w.bits == 4 || w.bits == 8) && (w.group == 32 || w.group == 64 || w.group == 128)) {
    int8_t* pl = s_planes.get<int8_t>(size_t(MB * K * 3));
    float* sc = s_sx.get<float>(size_t(MB * gpr));
    vnni = true;
    for (int m = 0; m < MB && vnni; m++)
      vnni = neon_dot_prepare(x + m * K, K, w.group, w.bits, pl + m * K * 3, sc + m * gpr);
    planes = pl;
    sx = sc;
  }
#endif
  const bool fast_q = quant && (w.bits == 4 || w.bits == 8) && w.group % (2 * VL) == 0;
  const float* xs = x;
  if ((!vnni && fast_q && w.bits == 4) || w.dtype == kBF16) {
    float* xp = s_xp.get<float>(size_t(MB * K));
    for (int m = 0; m < MB; m++) permute_pairs(x + m * K, K, xp + m * K);
    xs = xp;
  }
  const float* xsum = nullptr;
  if (quant) {
    float* t = s_xsum.get<float>(size_t(MB * gpr));
    for (int m = 0; m < MB; m++)
      for (int64_t g = 0; g < gpr; g++) {
        vf a = vsplat(0.f);
        float s = 0.f;
        const float* xg = x + m * K + g * w.group;
        int c = 0;
        for (; c + VL <= w.group; c += VL) a += vload(xg + c);
        for (; c < w.group; c++) s += xg[c];
        t[m * gpr + g] = hsum(a) + s;
      }
    xsum = t;
  }
  // One row at a time when the x operand of a row pass (f32 x, or the VNNI digit planes) stays in L1 and
  // the kernel is memory-bound (float and VNNI paths). The f32 path of quantized weights is bound by
  // code conversion and x loads, so it always shares each x load across R rows.
  const bool single = (vnni || !quant) && (vnni ? 3 : 4) * MB * K <= 16 * 1024;
  // Grain: enough rows per task that each task streams >= ~64 KB of weights.
  const int64_t row_bytes = quant ? K * w.bits / 8 : K * (w.dtype == kF32 ? 4 : 2);
  const int64_t grain = std::max<int64_t>(R, (64 * 1024) / std::max<int64_t>(1, row_bytes));
  const int sd = w.scale_dtype;
  parallel_for(N, grain, [&](int64_t n0, int64_t n1) {
    if (!quant) {
      auto run = [&](auto dt) {
        constexpr int DT = decltype(dt)::value;
        row_tiles<R>(n0, n1, [&](int64_t n) { gemv_float_tile<DT, MB, R>(xs, x, K, w, bias, y, N, n); },
                     [&](int64_t n) { gemv_float_tile<DT, MB, 1>(xs, x, K, w, bias, y, N, n); }, single);
      };
      if (w.dtype == kBF16) run(std::integral_constant<int, kBF16>());
      else if (w.dtype == kF16) run(std::integral_constant<int, kF16>());
      else run(std::integral_constant<int, kF32>());
      return;
    }
    auto run_q = [&](auto sdc) {
      constexpr int SD = decltype(sdc)::value;
#if defined(__AVX512VNNI__) && MLX_VL == 16
      if (vnni) {
        if (w.bits == 4)
          row_tiles<R>(n0, n1, [&](int64_t n) { gemv_vnni_tile<4, SD, MB, R>(planes, sx, xsum, K, w, bias, y, N, n); },
                       [&](int64_t n) { gemv_vnni_tile<4, SD, MB, 1>(planes, sx, xsum, K, w, bias, y, N, n); }, single);
        else
          row_tiles<R>(n0, n1, [&](int64_t n) { gemv_vnni_tile<8, SD, MB, R>(planes, sx, xsum, K, w, bias, y, N, n); },
                       [&](int64_t n) { gemv_vnni_tile<8, SD, MB, 1>(planes, sx, xsum, K, w, bias, y, N, n); }, single);
        return;
      }
#elif defined(__AVX2__) && MLX_VL == 8
      if (vnni) {  // AVX2 q4 integer dot: always one row at a time (the planes stay in L1/L2, measured faster)
        for (int64_t n = n0; n < n1; n++) avx2_q4_row<SD, MB>(planes, sx, xsum, K, w, bias, y, N, n);
        return;
      }
#elif defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4
      if (vnni) {  // SDOT integer dot, one row at a time (see gemv_neon_dot.h)
        if (w.bits == 4)
          for (int64_t n = n0; n < n1; n++) neon_dot_row<4, SD, MB>(planes, sx, xsum, K, w, bias, y, N, n);
        else
          for (int64_t n = n0; n < n1; n++) neon_dot_row<8, SD, MB>(planes, sx, xsum, K, w, bias, y, N, n);
        return;
      }
#endif
      if (fast_q && w.bits == 4)
        row_tiles<R>(n0, n1, [&](int64_t n) { gemv_q_tile<4, SD, MB, R>(xs, xsum, K, w, bias, y, N, n); },
                     [&](int64_t n) { gemv_q_tile<4, SD, MB, 1>(xs, xsum, K, w, bias, y, N, n); }, single);
      else if (fast_q)
        row_tiles<R>(n0, n1, [&](int64_t n) { gemv_q_tile<8, SD, MB, R>(xs, xsum, K, w, bias, y, N, n); },
                     [&](int64_t n) { gemv_q_tile<8, SD, MB, 1>(xs, xsum, K, w, bias, y, N, n); }, single);
      else
        for (int64_t n = n0; n < n1; n++) gemv_q_generic_row<MB>(x, K, w, bias, y, N, n);
    };
    if (sd == kBF16) run_q(std::integral_constant<int, kBF16>());
    else if (sd == kF16) run_q(std::integral_constant<int, kF16>());
    else run_q(std::integral_constant<int, kF32>());
  });
  (void)planes;
  (void)sx;
  (void)vnni;
}
