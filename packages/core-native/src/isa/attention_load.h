// K/V tile loaders of the attention kernel (see attention_impl.h, which includes this file inside
// namespace attn). A loader returns a tile as f32: a direct pointer into f32 tile storage, or converted,
// dequantized or (row layout) transposed into scratch; invalid slots read as zeros.
// Not a standalone header: no include guard on purpose.

// ---- tile loaders ---------------------------------------------------------------------------

static inline void tile_positions(const KvSegment& sg, int64_t t, int32_t* p) {
  for (int lane = 0; lane < TK; lane++) {
    const int64_t slot = t * TK + lane;
    p[lane] = slot < sg.n ? sg.pos[slot] : -1;
  }
}

// Software prefetch distance in tiles. A head's tiles are contiguous, so the loops below touch the
// same offset two tiles ahead as they go: paced, one line per line consumed, which hides DRAM latency
// and page walks without flooding the line-fill buffers.
constexpr int64_t kPrefetchTiles = 2;
static inline void pf(const void* p) { __builtin_prefetch(p, 0, 3); }

// The first K and V tiles of a unit over an f32 / f16 / bf16 tile-layout segment, prefetched while the unit before it
// runs: a decode unit over a short context reads only a few tiles, so the in-loop prefetch (two tiles
// ahead) never covers its start, and each unit used to begin with a cold DRAM stream.
static inline void prefetch_unit_start(const KvSegment& sg, int D, int DV, int g, int64_t t) {
  if (sg.layout != kKvTiles || (sg.dtype != kF32 && sg.dtype != kF16 && sg.dtype != kBF16) || t * TK >= sg.n) return;
  const int64_t esz = sg.dtype == kF32 ? 4 : 2;
  const uint8_t* k = sg.k + (g * (sg.capacity / TK) + t) * int64_t(D) * TK * esz;
  for (int64_t o = 0; o < int64_t(D) * TK * esz; o += 64) pf(k + o);
  const uint8_t* v = sg.v + (g * sg.capacity + t * TK) * int64_t(DV) * esz;
  for (int64_t o = 0; o < int64_t(DV) * esz * TK; o += 64) pf(v + o);
}

// K of tile t, KV head g, as f32 [D][TK]: a direct pointer for f32 tiles, else converted into `buf`.
static const float* k_tile(const KvSegment& sg, int H, int D, int g, int64_t t, float* buf) {
  if (sg.layout == kKvTiles) {
    const int64_t ti = g * (sg.capacity / TK) + t;
    const int64_t base = ti * int64_t(D) * TK;
    if (sg.dtype == kF32) {
      const float* k = reinterpret_cast<const float*>(sg.k) + base;
      const int64_t dist = kPrefetchTiles * int64_t(D) * TK;
      if ((t + kPrefetchTiles) * TK < sg.n)  // past the last filled tile is another head's unused capacity
        for (int64_t i = 0; i < int64_t(D) * TK; i += 16) pf(k + dist + i);
      return k;
    }
    if (sg.dtype == kQAffine) {
      const uint8_t* c = sg.k + base;
      const int ng = D / sg.group, G = sg.group;
      const float* sc = sg.k_scales + ti * int64_t(ng) * TK;
      const float* bi = sg.k_biases + ti * int64_t(ng) * TK;
      const int64_t dist = kPrefetchTiles * int64_t(D) * TK;
      pf(sc + kPrefetchTiles * ng * TK);
      pf(bi + kPrefetchTiles * ng * TK);
      for (int gi = 0; gi < ng; gi++) {
        vf s[NT], b[NT];
        for (int u = 0; u < NT; u++) { s[u] = vload(sc + gi * TK + u * VL); b[u] = vload(bi + gi * TK + u * VL); }
        for (int d = gi * G; d < (gi + 1) * G; d++) {
          if ((d & 3) == 0) pf(c + dist + d * TK);
          for (int u = 0; u < NT; u++) vstore(buf + d * TK + u * VL, decode_q8(c + d * TK + u * VL) * s[u] + b[u]);
        }
      }
      return buf;
    }
    const uint8_t* src = sg.k + base * 2;
    const int64_t dist = kPrefetchTiles * int64_t(D) * TK * 2;
    for (int64_t i = 0; i < int64_t(D) * TK; i += VL) {
      if (((i * 2) & 63) == 0) pf(src + dist + 2 * i);
      vstore(buf + i, sg.dtype == kF16 ? fast_f16(src + 2 * i) : load_bf16(src + 2 * i));
    }
    return buf;
  }
  // Row layout: transpose 16 rows into [D][TK]; slots past n are zero (their scores get masked).
  const int esz = sg.dtype == kF32 ? 4 : 2;
  float row[1024];
  for (int lane = 0; lane < TK; lane++) {
    const int64_t slot = t * TK + lane;
    if (slot >= sg.n) {
      for (int d = 0; d < D; d++) buf[d * TK + lane] = 0.f;
      continue;
    }
    const uint8_t* r = sg.k + (slot * H + g) * int64_t(D) * esz;
    for (int d0 = 0; d0 < D; d0 += 1024) {
      const int dn = std::min(1024, D - d0);
      int d = 0;
      for (; d + VL <= dn; d += VL) vstore(row + d, load_any(r, sg.dtype, d0 + d));
      for (; d < dn; d++) row[d] = load_scalar(r, sg.dtype, d0 + d);
      for (d = 0; d < dn; d++) buf[(d0 + d) * TK + lane] = row[d];
    }
  }
  return buf;
}

// V of tile t, KV head g, as f32 rows [TK][stride]. Invalid slots (pos < 0) read as zero rows so that
// stale or non-finite storage never leaks into the output through 0 * x.
static const float* v_tile(const KvSegment& sg, int H, int DV, int DVp, int g, int64_t t, const int32_t* tpos,
                           float* buf, int& stride) {
  bool all_valid = true;
  for (int lane = 0; lane < TK; lane++) all_valid &= tpos[lane] >= 0;
  stride = DVp;
  const int64_t row0 = g * sg.capacity + t * TK;  // tile layout: V row of lane 0
  // Rows of consecutive tiles are contiguous: each lane below prefetches its row two tiles ahead.
  const int64_t rb = sg.dtype == kQAffine ? int64_t(DV) * sg.v_bits / 8 : int64_t(DV) * (sg.dtype == kF32 ? 4 : 2);
  const uint8_t* ahead = sg.v + (row0 + kPrefetchTiles * TK) * rb;
  if (sg.layout == kKvTiles) {
    if (sg.dtype == kQAffine) {
      const int ngv = DV / sg.group;
      for (int64_t o = 0; o < int64_t(ngv) * TK * 4; o += 64) {
        pf(reinterpret_cast<const uint8_t*>(sg.v_scales + (row0 + kPrefetchTiles * TK) * ngv) + o);
        pf(reinterpret_cast<const uint8_t*>(sg.v_biases + (row0 + kPrefetchTiles * TK) * ngv) + o);
      }
    }
  }
  if (sg.layout == kKvTiles && sg.dtype == kF32 && DV == DVp && all_valid) {
    if ((t + kPrefetchTiles) * TK < sg.n)
      for (int64_t o = 0; o < rb * TK; o += 64) pf(ahead + o);
    stride = DV;
    return reinterpret_cast<const float*>(sg.v) + row0 * DV;
  }
  for (int lane = 0; lane < TK; lane++) {
    float* dst = buf + lane * DVp;
    if (sg.layout == kKvTiles)
      for (int64_t o = 0; o < rb; o += 64) pf(ahead + lane * rb + o);
    if (tpos[lane] < 0) {
      for (int d = 0; d < DVp; d++) dst[d] = 0.f;
      continue;
    }
    const int64_t slot = t * TK + lane;
    if (sg.dtype == kQAffine) {
      const int ng = DV / sg.group;
      const int64_t r = row0 + lane;
      const uint8_t* codes = sg.v + r * (int64_t(DV) * sg.v_bits / 8);
      const float* sc = sg.v_scales + r * ng;
      const float* bi = sg.v_biases + r * ng;
      const int G = sg.group;
      if (sg.v_bits == 8) {
        for (int gi = 0; gi < ng; gi++) {
          const float s = sc[gi], b = bi[gi];
          for (int d = gi * G; d < (gi + 1) * G; d += VL) vstore(dst + d, decode_q8(codes + d) * s + b);
        }
      } else {
        // Split-nibble chunks of 32 codes: byte i holds code i (low) and code i + 16 (high).
        for (int c0 = 0; c0 < DV; c0 += 32) {
          const float s = sc[c0 / G], b = bi[c0 / G];
          for (int off = 0; off < 16; off += VL) {
            vf lo, hi;
            decode_q4(codes + c0 / 2 + off, lo, hi);
            vstore(dst + c0 + off, lo * s + b);
            vstore(dst + c0 + 16 + off, hi * s + b);
          }
        }
      }
      continue;
    }
    const int esz = sg.dtype == kF32 ? 4 : 2;
    const uint8_t* r = sg.layout == kKvTiles ? sg.v + (row0 + lane) * int64_t(DV) * esz
                                             : sg.v + (slot * H + g) * int64_t(DV) * esz;
    int d = 0;
    if (sg.dtype == kF16)
      for (; d + VL <= DV; d += VL) vstore(dst + d, fast_f16(r + 2 * d));
    else
      for (; d + VL <= DV; d += VL) vstore(dst + d, load_any(r, sg.dtype, d));
    for (; d < DV; d++) dst[d] = load_scalar(r, sg.dtype, d);
    for (; d < DVp; d++) dst[d] = 0.f;
  }
  return buf;
}

