// Parts shared by every GEMV kernel: software prefetch, rows per tile, and the pair permutation of x
// that meets pair-packed weight layouts.
// Included by kernels_impl.h inside the variant namespace (MLX_NS). Not a standalone header: no include
// guard on purpose.

// Software prefetch for GEMV tiles. Rows are consecutive, so the next tile (R rows) is the contiguous
// region after this one; while a tile is computed, its share of that region is prefetched in address
// order, one cache line per 64 bytes the tile consumes. DRAM then sees one sequential stream per thread
// even though a tile reads R rows side by side. Short rows give the hardware prefetchers too little to
// train on, and the quantized inner loops are light enough that waiting on DRAM would show.
// The distance is one tile, and at least 4 KB.
// Items (rows or tiles) per GEMV task: enough that a task streams >= ~64 KB of W (per_64k items), but
// never fewer tasks than threads when W has the items for it: a small W (a 2048 x 64 LAuReL projection,
// 64 KB) read from DRAM by one thread waits on one core's misses while the other idles. At least lo.
static inline int64_t gemv_task_grain(int64_t items, int64_t per_64k, int64_t lo) {
  const int64_t per_thread = (items + pool_threads() - 1) / pool_threads();
  return std::max<int64_t>(lo, std::min<int64_t>(per_64k, per_thread));
}

static inline int64_t gemv_prefetch_distance(int R, int64_t row_bytes) {
  return std::max<int64_t>(int64_t(R) * row_bytes, 4096);
}
struct TilePrefetch {
  const uint8_t* base;  // first byte to prefetch (tile start + distance)
  int64_t issued = 0, consumed = 0;
  TilePrefetch(const uint8_t* tile, int64_t distance) : base(tile + distance) {}
  // The tile consumed `bytes` more bytes: prefetch as many ahead.
  inline void advance(int64_t bytes) {
    consumed += bytes;
    for (; issued < consumed; issued += 64) __builtin_prefetch(base + issued, 0, 3);
  }
};

// Rows of W per GEMV tile: every x load feeds R weight rows, and R x MB accumulator sets stay in
// registers (32 vector registers with AVX-512, 16 otherwise). Used when x is too large to stay in L1 for
// a whole row; otherwise the GEMV walks one row at a time (gemv_block's `single`), which reads W as
// one sequential stream per thread: DRAM serves that faster than R interleaved streams.
template <int MB>
struct GemvRows {
  static constexpr int R = MB == 1 ? 4 : VL >= 16 ? (MB == 2 ? 4 : 2) : (MB == 2 ? 2 : 1);
};

// x reordered for the pair-packed layouts: each block of 2*VL elements becomes [evens..., odds...], so
// the low/high nibbles of VL packed 4-bit bytes, or the low/high halves of VL u32 words of bf16 pairs,
// meet their x values in one aligned vector each. A tail shorter than 2*VL is copied unchanged.
static void permute_pairs(const float* x, int64_t K, float* xp) {
  int64_t blk = 0;
  for (; blk + 2 * VL <= K; blk += 2 * VL)
    for (int j = 0; j < VL; j++) {
      xp[blk + j] = x[blk + 2 * j];
      xp[blk + VL + j] = x[blk + 2 * j + 1];
    }
  for (; blk < K; blk++) xp[blk] = x[blk];
}
