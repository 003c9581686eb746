// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

// ---------------------------------------------------------------------------------------------
// RoPE. Half-split (NeoX) pairs (i, i + rot/2); interleaved pairs (2i, 2i+1). Dimensions past rot_dim
// pass through. The math per element depends only on the position, so a token rotated at offset p
// alone is bitwise identical to the same token inside a longer sequence.

static void rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* pos,
                 const float* cos_tab, const float* sin_tab, int64_t rot_dim, bool interleaved) {
  const int64_t half = rot_dim / 2;
  parallel_for(n_tok, 8, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const float* c = cos_tab + int64_t(pos[t]) * half;
      const float* s = sin_tab + int64_t(pos[t]) * half;
      for (int64_t h = 0; h < n_heads; h++) {
        float* v = x + (t * n_heads + h) * head_dim;
        if (interleaved) {
          for (int64_t i = 0; i < half; i++) {
            const float a = v[2 * i], b = v[2 * i + 1];
            v[2 * i] = a * c[i] - b * s[i];
            v[2 * i + 1] = b * c[i] + a * s[i];
          }
        } else {
          for (int64_t i = 0; i < half; i++) {
            const float a = v[i], b = v[i + half];
            v[i] = a * c[i] - b * s[i];
            v[i + half] = b * c[i] + a * s[i];
          }
        }
      }
    }
  });
}
