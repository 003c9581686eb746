// Read-bandwidth probe: sums a buffer with every thread of the pool (bench kernels, pnpm bench peers).
// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

static double stream_sum(const uint8_t* p, int64_t bytes) {
  const int64_t n = bytes / int64_t(sizeof(vu));
  std::atomic<uint64_t> total{0};
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    vu a0 = {}, a1 = {}, a2 = {}, a3 = {};
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) {
      vu v0, v1, v2, v3;
      std::memcpy(&v0, p + (i + 0) * sizeof(vu), sizeof(vu));
      std::memcpy(&v1, p + (i + 1) * sizeof(vu), sizeof(vu));
      std::memcpy(&v2, p + (i + 2) * sizeof(vu), sizeof(vu));
      std::memcpy(&v3, p + (i + 3) * sizeof(vu), sizeof(vu));
      a0 += v0; a1 += v1; a2 += v2; a3 += v3;
    }
    for (; i < i1; i++) { vu v; std::memcpy(&v, p + i * sizeof(vu), sizeof(vu)); a0 += v; }
    vu s = a0 + a1 + a2 + a3;
    uint64_t t = 0;
    for (int k = 0; k < VL; k++) t += s[k];
    total += t;
  });
  // Whole 32-bit words past the last full vector.
  uint64_t t = 0;
  for (int64_t b = n * int64_t(sizeof(vu)); b + 4 <= bytes; b += 4) {
    uint32_t w;
    std::memcpy(&w, p + b, 4);
    t += w;
  }
  // The lanes wrap modulo 2^32, so the defined result is the sum of the words modulo 2^32 (a checksum
  // that keeps the reads from being optimised away), the same for every variant and thread count.
  return double(uint32_t(total.load() + t));
}
