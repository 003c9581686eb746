// GEMV over MLX affine weights on the f32 path (codes converted to f32 in registers): the 4-/8-bit
// tiles, the any-width fallback, and the row-range entry point for the MoE kernels. The integer-dot
// paths of gemv_int_dot.h replace it where the ISA has byte dot products.
// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

// Quantized GEMV. y_r = sum_g ( s[r,g] * sum_{c in g} q[r,c] x[c] ) + sum_g b[r,g] * xsum[g]: the hot
// loop accumulates q * x per group in vector lanes and applies the group's scale once; the bias half is
// one short dot product per row against the per-group sums of x (xsum), precomputed once per call.
// sum_{i < n} b[off + i] * xs[i] with b in dtype SD.
template <int SD>
static inline float scales_dot(const uint8_t* b, int64_t off, const float* xs, int64_t n) {
  vf a = vsplat(0.f);
  int64_t i = 0;
  for (; i + VL <= n; i += VL) a += load_any(b, SD, off + i) * vload(xs + i);
  float s = hsum(a);
  for (; i < n; i++) s += scale_t<SD>(b, off + i) * xs[i];
  return s;
}

// 4- and 8-bit tile: rows [n, n + R). For 4-bit, xs is permute_pairs'd (low nibbles = even elements).
// Requires group % (2 * VL) == 0.
template <int BITS, int SD, int MB, int R>
static void gemv_q_tile(const float* xs, const float* xsum, int64_t K, const WeightRef& w, const float* bias,
                        float* y, int64_t N, int64_t n) {
  const int64_t G = w.group, gpr = K / G, row_bytes = K * BITS / 8;
  const uint8_t* rows[R];
  for (int r = 0; r < R; r++) rows[r] = w.data + (n + r) * row_bytes;
  TilePrefetch pref(rows[0], gemv_prefetch_distance(R, row_bytes));
  vf acc[R][MB];
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) acc[r][m] = vsplat(0.f);
  for (int64_t g = 0; g < gpr; g++) {
    vf qa[R][MB];
    for (int r = 0; r < R; r++)
      for (int m = 0; m < MB; m++) qa[r][m] = vsplat(0.f);
    for (int64_t c = g * G; c < (g + 1) * G; c += 2 * VL) {
      vf xa[MB], xb[MB];
      for (int m = 0; m < MB; m++) {
        xa[m] = vload(xs + m * K + c);
        xb[m] = vload(xs + m * K + c + VL);
      }
      pref.advance(R * 2 * VL * BITS / 8);
      for (int r = 0; r < R; r++) {
        vf lo, hi;
        if (BITS == 4) {
          decode_q4(rows[r] + (c >> 1), lo, hi);
        } else {
          lo = decode_q8(rows[r] + c);
          hi = decode_q8(rows[r] + c + VL);
        }
        for (int m = 0; m < MB; m++) {
          qa[r][m] += lo * xa[m];
          qa[r][m] += hi * xb[m];
        }
      }
    }
    for (int r = 0; r < R; r++) {
      const float s = scale_t<SD>(w.scales, (n + r) * gpr + g);
      for (int m = 0; m < MB; m++) acc[r][m] += qa[r][m] * s;
    }
  }
  for (int r = 0; r < R; r++)
    for (int m = 0; m < MB; m++) {
      const float v = hsum(acc[r][m]) + scales_dot<SD>(w.biases, (n + r) * gpr, xsum + m * gpr, gpr);
      y[m * N + n + r] = bias ? v + bias[n + r] : v;
    }
}

// Any bit width / group: dequantizes one group of one row at a time into registers' worth of scratch.
template <int MB>
static void gemv_q_generic_row(const float* x, int64_t K, const WeightRef& w, const float* bias, float* y,
                               int64_t N, int64_t n) {
  float tmp[128];
  vf acc[MB];
  float tail[MB];
  for (int m = 0; m < MB; m++) { acc[m] = vsplat(0.f); tail[m] = 0.f; }
  const int64_t G = w.group;
  for (int64_t c0 = 0; c0 < K; c0 += G) {
    dequant_row_range(w, n, c0, G, tmp);
    int64_t c = 0;
    for (; c + VL <= G; c += VL) {
      const vf wv = vload(tmp + c);
      for (int m = 0; m < MB; m++) acc[m] += wv * vload(x + m * K + c0 + c);
    }
    for (; c < G; c++)
      for (int m = 0; m < MB; m++) tail[m] += tmp[c] * x[m * K + c0 + c];
  }
  for (int m = 0; m < MB; m++) {
    const float v = hsum(acc[m]) + tail[m];
    y[m * N + n] = bias ? v + bias[n] : v;
  }
}

// Row-range entry point for other kernels (moe_impl.h): rows [n0, n1) of W against MB rows of x, y indexed
// by absolute row. x must be permute_for_q4'd when bits == 4 and group % (2 * VL) == 0 (as is otherwise);
// xsum holds the per-group sums of x.
static inline void permute_for_q4(const float* x, int64_t K, float* xp) { permute_pairs(x, K, xp); }

template <int MB, int SD>
static void gemv_q_rows(const float* xp, const float* xsum, int64_t K, const WeightRef& w, const float* bias, float* y,
                        int64_t N, int64_t n0, int64_t n1) {
  constexpr int R = GemvRows<MB>::R;
  const bool fast = (w.bits == 4 || w.bits == 8) && w.group % (2 * VL) == 0;
  if (fast && w.bits == 4)
    row_tiles<R>(n0, n1, [&](int64_t n) { gemv_q_tile<4, SD, MB, R>(xp, xsum, K, w, bias, y, N, n); },
                 [&](int64_t n) { gemv_q_tile<4, SD, MB, 1>(xp, xsum, K, w, bias, y, N, n); });
  else if (fast)
    row_tiles<R>(n0, n1, [&](int64_t n) { gemv_q_tile<8, SD, MB, R>(xp, xsum, K, w, bias, y, N, n); },
                 [&](int64_t n) { gemv_q_tile<8, SD, MB, 1>(xp, xsum, K, w, bias, y, N, n); });
  else
    for (int64_t n = n0; n < n1; n++) gemv_q_generic_row<MB>(xp, K, w, bias, y, N, n);
}
