// GEMV dispatch (1 <= M <= kGemvMaxM rows of x): picks the integer-dot path of this ISA where the weight
// allows it, else the f32 paths of gemv_quant.h / gemv_float.h, and splits W's rows over the thread pool.
// Every row of W is read from DRAM once per call, whatever M: a task walks its rows in panels that stay
// in L2 and runs the tile kernels over blocks of up to kGemvBlock x rows per panel, so batched decode
// (M sequences, one row each) streams the weights once per step, not once per 4 rows.
// Numerics: every tile kernel computes each (W row, x row) dot product with its own accumulators in an
// order that depends on neither the block size nor the tile height, so row m of a call with M rows is
// bit-identical to a call with that row alone (tested for every variant in test/matmul-multirow.test.ts).
// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

constexpr int kGemvMaxM = 16;  // rows of x the GEMV takes in one pass over W (matmul's GEMM above)
static_assert(kGemvMaxM == mlx::kMatmulGemvMaxRows, "kernels.h names the same bound for the bindings");
constexpr int kGemvBlock = 4;  // x rows per tile-kernel call (the accumulators stay in registers)

// Calls f(integral_constant<int, MB>, m0) for each block [m0, m0 + MB) of up to kGemvBlock rows of [0, M).
template <class F>
static inline void for_x_blocks(int64_t M, const F& f) {
  for (int64_t m0 = 0; m0 < M; m0 += kGemvBlock) {
    switch (std::min<int64_t>(kGemvBlock, M - m0)) {
      case 4: f(std::integral_constant<int, 4>(), m0); break;
      case 3: f(std::integral_constant<int, 3>(), m0); break;
      case 2: f(std::integral_constant<int, 2>(), m0); break;
      default: f(std::integral_constant<int, 1>(), m0); break;
    }
  }
}

#if defined(__AVX512VNNI__) && MLX_VL == 16
static void gemv_tiles(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int np);  // gemv_tiles.h
#endif

// np: digit planes of x for the AVX-512 VNNI path: 3 = the exact split (every other path is exact
// too), 2 / 1 = the "fast" / "int8" integer activations (matmul_q8act passes them; see vnni_prepare).
static void gemv(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int np = 3) {
#if defined(__AVX512VNNI__) && MLX_VL == 16
  if (w.layout == kWeightTiles16) {  // only this variant is handed tiled weights (KernelTable::weight_tiles)
    gemv_tiles(x, M, w, bias, y, np);
    return;
  }
#endif
  const int64_t K = w.cols, N = w.rows;
  static thread_local Scratch s_xp, s_xsum;
  const bool quant = w.dtype == kQAffine;
  const int64_t gpr = quant ? K / w.group : 0;
  bool vnni = false;  // the integer-dot path runs (VNNI, the AVX2 q4 path or NEON SDOT, below)
  int bad_row = -1;   // a row of x the integer-dot path declined (non-finite)
  const int8_t* planes = nullptr;  // [M][K * 3] digit planes
  const float* sx = nullptr;       // [M][gpr] their group scales
#if defined(__AVX512VNNI__) && MLX_VL == 16
  static thread_local Scratch s_planes, s_sx;
  if (quant && ((w.bits == 4 && K % 128 == 0) || (w.bits == 8 && K % 64 == 0))) {
    int8_t* pl = s_planes.get<int8_t>(size_t(M * K * np));
    float* sc = s_sx.get<float>(size_t(M * gpr));
    vnni = true;
    for (int m = 0; m < M && bad_row < 0; m++)
      if (!vnni_prepare(x + m * K, K, w.group, w.bits, pl + m * K * np, sc + m * gpr, np)) bad_row = m;
    planes = pl;
    sx = sc;
  }
#elif defined(__AVX2__) && MLX_VL == 8
  static thread_local Scratch s_planes, s_sx;
  // np < 3 (from matmul_q8act): "fast" takes one s16 activation per element (avx2_q4_row_s16), "int8"
  // one s8 (avx2_q4_row_s8, the same integers as s16 values with T = 127).
  const bool s16 = np < 3;
  if (quant && w.bits == 4 && K % kQ4Chunk == 0 && (w.group == 32 || w.group == 64 || w.group == 128)) {
    int8_t* pl = s_planes.get<int8_t>(size_t(M * K * 3));
    float* sc = s_sx.get<float>(size_t(M * gpr));
    vnni = true;
    for (int m = 0; m < M && bad_row < 0; m++) {
      const bool ok = np == 1   ? avx2_q4_prepare_s8(x + m * K, K, w.group, pl + m * K, sc + m * gpr)
                      : np == 2 ? avx2_q4_prepare_s16(x + m * K, K, w.group, kS16Fast, reinterpret_cast<int16_t*>(pl) + m * K, sc + m * gpr)
                                : avx2_q4_prepare(x + m * K, K, w.group, pl + m * K * 3, sc + m * gpr);
      if (!ok) bad_row = m;
    }
    planes = pl;
    sx = sc;
  }
#elif defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4
  static thread_local Scratch s_planes, s_sx;
  if (quant && (w.bits == 4 || w.bits == 8) && (w.group == 32 || w.group == 64 || w.group == 128)) {
    int8_t* pl = s_planes.get<int8_t>(size_t(M * K * 3));
    float* sc = s_sx.get<float>(size_t(M * gpr));
    vnni = true;
    for (int m = 0; m < M && bad_row < 0; m++)
      if (!neon_dot_prepare(x + m * K, K, w.group, w.bits, pl + m * K * 3, sc + m * gpr)) bad_row = m;
    planes = pl;
    sx = sc;
  }
#endif
  if (bad_row >= 0) {
    // A non-finite row takes the f32 path (which propagates it) and the others the integer-dot one,
    // each as it would alone: one call per row keeps every row equal to its M = 1 result.
    if (M == 1) vnni = false;
    else {
      for (int64_t m = 0; m < M; m++) gemv(x + m * K, 1, w, bias, y + m * N, np);
      return;
    }
  }
  const bool fast_q = quant && (w.bits == 4 || w.bits == 8) && w.group % (2 * VL) == 0;
  const float* xs = x;
  if ((!vnni && fast_q && w.bits == 4) || w.dtype == kBF16) {
    float* xp = s_xp.get<float>(size_t(M * K));
    for (int m = 0; m < M; m++) permute_pairs(x + m * K, K, xp + m * K);
    xs = xp;
  }
  const float* xsum = nullptr;
  if (quant) {
    float* t = s_xsum.get<float>(size_t(M * gpr));
    for (int m = 0; m < M; m++)
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
  // One row at a time when the x operand of a row pass (f32 x, or the VNNI digit planes) of one block
  // stays in L1 and the kernel is memory-bound (float and VNNI paths). The f32 path of quantized weights
  // is bound by code conversion and x loads, so it always shares each x load across R rows.
  const int64_t mb0 = std::min<int64_t>(M, kGemvBlock);
  const bool single = (vnni || !quant) && (vnni ? np : 4) * mb0 * K <= 16 * 1024;
  // Grain: enough rows per task that each task streams >= ~64 KB of weights. Panel: the rows a task
  // runs every x block over before moving on, ~64 KB of W, so blocks after the first read it from L2.
  const int64_t row_bytes = quant ? K * w.bits / 8 : K * (w.dtype == kF32 ? 4 : 2);
  const int64_t rows64k = (64 * 1024) / std::max<int64_t>(1, row_bytes);
  const int64_t grain = gemv_task_grain(N, rows64k, 4);
  const int64_t panel = M > kGemvBlock ? std::max<int64_t>(4, rows64k) : N;
  const int sd = w.scale_dtype;
  const int64_t xpl = K * (vnni ? np : 3);  // digit-plane bytes per x row
  // Runs tile(mbc, rc, m0, n) (rc: the tile height, R or 1) over rows [p0, p1) for every x block.
  auto over_blocks = [&](int64_t p0, int64_t p1, const auto& tile) {
    for_x_blocks(M, [&](auto mbc, int64_t m0) {
      constexpr int MB = decltype(mbc)::value;
      constexpr int R = GemvRows<MB>::R;
      row_tiles<R>(p0, p1, [&](int64_t n) { tile(mbc, std::integral_constant<int, R>(), m0, n); },
                   [&](int64_t n) { tile(mbc, std::integral_constant<int, 1>(), m0, n); }, single);
    });
  };
  parallel_for(N, grain, [&](int64_t n0, int64_t n1) {
    for (int64_t p0 = n0; p0 < n1; p0 += panel) {
      const int64_t p1 = std::min(n1, p0 + panel);
      if (!quant) {
        auto run = [&](auto dt) {
          constexpr int DT = decltype(dt)::value;
          over_blocks(p0, p1, [&](auto mbc, auto rc, int64_t m0, int64_t n) {
            gemv_float_tile<DT, decltype(mbc)::value, decltype(rc)::value>(xs + m0 * K, x + m0 * K, K, w, bias, y + m0 * N, N, n);
          });
        };
        if (w.dtype == kBF16) run(std::integral_constant<int, kBF16>());
        else if (w.dtype == kF16) run(std::integral_constant<int, kF16>());
        else run(std::integral_constant<int, kF32>());
        continue;
      }
      auto run_q = [&](auto sdc) {
        constexpr int SD = decltype(sdc)::value;
#if defined(__AVX512VNNI__) && MLX_VL == 16
        if (vnni) {
          auto run_np = [&](auto npc) {
            constexpr int NP = decltype(npc)::value;
            if (M == 1 && single && w.bits == 4) {
              // Decode's case: one x row, 4-bit codes, one sequential stream of rows (bit-identical to the
              // generic tile kernel below).
              if (w.group == 32) gemv_vnni_rows_q4_m1<SD, NP, 32>(planes, sx, xsum, K, w, bias, y, p0, p1);
              else if (w.group == 64) gemv_vnni_rows_q4_m1<SD, NP, 64>(planes, sx, xsum, K, w, bias, y, p0, p1);
              else gemv_vnni_rows_q4_m1<SD, NP, 128>(planes, sx, xsum, K, w, bias, y, p0, p1);
              return;
            }
            over_blocks(p0, p1, [&](auto mbc, auto rc, int64_t m0, int64_t n) {
              constexpr int MB = decltype(mbc)::value, R = decltype(rc)::value;
              if (w.bits == 4) gemv_vnni_tile<4, SD, MB, R, NP>(planes + m0 * xpl, sx + m0 * gpr, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n);
              else gemv_vnni_tile<8, SD, MB, R, NP>(planes + m0 * xpl, sx + m0 * gpr, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n);
            });
          };
          if (np == 1) run_np(std::integral_constant<int, 1>());
          else if (np == 2) run_np(std::integral_constant<int, 2>());
          else run_np(std::integral_constant<int, 3>());
          return;
        }
#elif defined(__AVX2__) && MLX_VL == 8
        if (vnni) {  // AVX2 q4 integer dot: always one row at a time (the planes stay in L1/L2, measured faster)
          for_x_blocks(M, [&](auto mbc, int64_t m0) {
            constexpr int MB = decltype(mbc)::value;
            if (s16) {
              const int16_t* xs16 = reinterpret_cast<const int16_t*>(planes) + m0 * K;
              auto rows = [&](auto gc) {
                constexpr int G = decltype(gc)::value;
                if (np == 1)
                  for (int64_t n = p0; n < p1; n++)
                    avx2_q4_row_s8<SD, MB, G>(planes + m0 * K, sx + m0 * gpr, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n);
                else
                  for (int64_t n = p0; n < p1; n++)
                    avx2_q4_row_s16<SD, MB, G>(xs16, sx + m0 * gpr, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n);
              };
              if (w.group == 64) rows(std::integral_constant<int, 64>());
              else if (w.group == 128) rows(std::integral_constant<int, 128>());
              else rows(std::integral_constant<int, 32>());
              return;
            }
            for (int64_t n = p0; n < p1; n++)
              avx2_q4_row<SD, MB>(planes + m0 * xpl, sx + m0 * gpr, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n);
          });
          return;
        }
#elif defined(__ARM_FEATURE_DOTPROD) && MLX_VL == 4
        if (vnni) {  // SDOT integer dot, one row at a time (see gemv_neon_dot.h)
          for_x_blocks(M, [&](auto mbc, int64_t m0) {
            constexpr int MB = decltype(mbc)::value;
            for (int64_t n = p0; n < p1; n++) {
              if (w.bits == 4) neon_dot_row<4, SD, MB>(planes + m0 * xpl, sx + m0 * gpr, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n);
              else neon_dot_row<8, SD, MB>(planes + m0 * xpl, sx + m0 * gpr, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n);
            }
          });
          return;
        }
#endif
        if (fast_q) {
          // The f32 path of quantized weights always shares each x load across R rows (see `single`).
          for_x_blocks(M, [&](auto mbc, int64_t m0) {
            constexpr int MB = decltype(mbc)::value;
            constexpr int R = GemvRows<MB>::R;
            if (w.bits == 4)
              row_tiles<R>(p0, p1, [&](int64_t n) { gemv_q_tile<4, SD, MB, R>(xs + m0 * K, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n); },
                           [&](int64_t n) { gemv_q_tile<4, SD, MB, 1>(xs + m0 * K, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n); });
            else
              row_tiles<R>(p0, p1, [&](int64_t n) { gemv_q_tile<8, SD, MB, R>(xs + m0 * K, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n); },
                           [&](int64_t n) { gemv_q_tile<8, SD, MB, 1>(xs + m0 * K, xsum + m0 * gpr, K, w, bias, y + m0 * N, N, n); });
          });
        } else {
          for_x_blocks(M, [&](auto mbc, int64_t m0) {
            constexpr int MB = decltype(mbc)::value;
            for (int64_t n = p0; n < p1; n++) gemv_q_generic_row<MB>(x + m0 * K, K, w, bias, y + m0 * N, N, n);
          });
        }
      };
      if (sd == kBF16) run_q(std::integral_constant<int, kBF16>());
      else if (sd == kF16) run_q(std::integral_constant<int, kF16>());
      else run_q(std::integral_constant<int, kF32>());
    }
  });
  (void)planes;
  (void)sx;
  (void)xpl;
}
