// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

// ---------------------------------------------------------------------------------------------
// Matmul. y[M,N] = x[M,K] . W^T. Small M (decode, up to kGemvMaxM = 16 rows: batched decode too)
// streams W once through a GEMV that dequantizes in registers (gemv.h); larger M (prefill) runs a
// register-blocked GEMM: the dot-form kernel of gemm_dot.h for weights that need decoding, the
// transposed-x kernel of gemm_xt.h for f32 weights read in place.

static void matmul(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y) {
  if (M > kGemvMaxM) {
    // f32 weights are read in place by the transposed-x kernel; the others are decoded, which the
    // dot-form kernel amortizes better (see gemm_dot.h).
    if (w.dtype == kF32) gemm_f32(x, M, w, bias, y);
    else gemm_dot(x, M, w, bias, y);
    return;
  }
  gemv(x, M, w, bias, y);
}

static void gather_rows(const int32_t* ids, int64_t n, const WeightRef& w, float* out) {
  const int64_t H = w.cols;
  parallel_for(n, 16, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) weight_row_range(w, ids[i], 0, H, out + i * H);
  });
}
