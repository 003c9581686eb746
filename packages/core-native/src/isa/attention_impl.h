// Attention kernels, included into kernels_impl.h inside the variant namespace (MLX_NS), so the
// vector helpers (vf, vload, load_any, decode_q8, decode_q4, vexp, vtanh, ...) of that file are in scope.
// Not a standalone header: no include guard on purpose.
//
// One kernel serves prefill and decode, a batch of sequences and every KV storage kind:
// - Work unit = (sequence, KV head, up to QB "query vectors"), a query vector being one (row, head) of
//   the heads that share that KV head. Each K/V tile is loaded (converted/dequantized) once per unit
//   and used by all its query vectors, which is what makes GQA decode memory-bound instead of
//   conversion-bound.
// - Keys come in 16-slot tiles. K is consumed transposed ([D][16]), so scores for 16 keys are plain
//   vector FMAs with a broadcast query element (no horizontal sums); cache storage is already laid out
//   that way (KvSegment kKvTiles), the legacy row layout is transposed into scratch per tile.
// - Flash-style: blocks of BT tiles, scores -> online softmax (f32, running max and sum) -> P.V into
//   f32 accumulators; a tile nobody can see is skipped before it is read.
// - Split-K: when there are fewer units than ~4x the threads (decode), a unit's tile list is split
//   across tasks whose partial (max, sum, acc) are merged afterwards.
// - Visibility: slot valid && (causal/window/block-sparse || same bidirectional span) && mask.
//   A query that sees no key outputs zeros.

namespace attn {

constexpr int TK = kKvTile;       // slots per tile
constexpr int NT = TK / VL;       // vectors per tile row (VL is 4, 8 or 16)
constexpr int QR = 8 / NT;        // query vectors per micro-kernel step (QR * NT = 8 accumulators)
constexpr int BT = 4;             // tiles per online-softmax block
constexpr int SK = BT * TK;       // score columns per block
constexpr int kMinSplitTiles = 8; // split-K never makes a task of fewer tiles than this
static_assert(TK % VL == 0 && NT * QR == 8, "tile / vector width mismatch");

static inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// f16 -> f32 for VL elements: the F16C/AVX-512 conversion instruction where the variant has it (exact,
// subnormals and inf/nan included), else the generic bit manipulation of kernels_impl.h.
static inline vf fast_f16(const uint8_t* p) {
#if defined(__AVX512F__) && MLX_VL == 16
  return (vf)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif defined(__F16C__) && MLX_VL == 8
  return (vf)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
  return load_f16(p);
#endif
}
static inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

struct TileRef {
  int seg;
  int64_t t;     // tile index inside the segment
  int64_t base;  // sequence-global slot index of lane 0 (mask column)
};

struct Unit {
  int seq;
  int g;          // KV head
  int64_t k0;     // first query vector (row-major over (row, head-in-group))
  int nqv;
  int splits;
  int64_t part;   // offset of this unit's partials (floats), when splits > 1
};

// Everything about one call that tasks only read.
struct Ctx {
  const AttentionArgs* a;
  const AttnSeq* seqs;
  int H, G, D, DV, DVp, QB;
  std::vector<std::vector<TileRef>> tiles;  // per sequence
};

struct Scratch {
  std::vector<float> q, kt, vt, s, acc, m, l;
  std::vector<int32_t> row, head, slo, shi;
  std::vector<uint16_t> vis;  // [BT][nqv] visible-lane bits of the block's tiles
  std::vector<uint8_t> full;  // [BT] tile visible to every query vector in every lane
};
static Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}
template <class T> static inline T* grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

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

// K of tile t, KV head g, as f32 [D][TK]: a direct pointer for f32 tiles, else converted into `buf`.
static const float* k_tile(const KvSegment& sg, int H, int D, int g, int64_t t, float* buf) {
  if (sg.layout == kKvTiles) {
    const int64_t ti = g * (sg.capacity / TK) + t;
    const int64_t base = ti * int64_t(D) * TK;
    if (sg.dtype == kF32) {
      const float* k = reinterpret_cast<const float*>(sg.k) + base;
      const int64_t dist = kPrefetchTiles * int64_t(D) * TK;
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

// ---- micro-kernels --------------------------------------------------------------------------

// s[qv * SK + col0 + lane] = q[qv] . K[:, lane] for every (padded) query vector; kt is [D][TK].
static void scores_tile(const float* q, int nqv_pad, int D, const float* kt, float* s, int col0) {
  for (int r0 = 0; r0 < nqv_pad; r0 += QR) {
    vf acc[QR][NT];
    for (int r = 0; r < QR; r++)
      for (int u = 0; u < NT; u++) acc[r][u] = vsplat(0.f);
    const float* qr = q + int64_t(r0) * D;
    for (int d = 0; d < D; d++) {
      vf kv[NT];
      for (int u = 0; u < NT; u++) kv[u] = vload(kt + d * TK + u * VL);
      for (int r = 0; r < QR; r++) {
        const float x = qr[r * D + d];
        for (int u = 0; u < NT; u++) acc[r][u] += x * kv[u];
      }
    }
    for (int r = 0; r < QR; r++)
      for (int u = 0; u < NT; u++) vstore(s + (r0 + r) * SK + col0 + u * VL, acc[r][u]);
  }
}

// acc[qv][:] += sum over the block's nb tiles and their lanes of p[qv * SK + b * TK + lane] * V_b[lane][:];
// tile b's rows are strides[b] floats apart. Accumulators stay in registers across the whole block.
static void pv_block(const float* p, int nqv_pad, int DVp, const float* const* vt, const int* strides, int nb, float* acc) {
  for (int r0 = 0; r0 < nqv_pad; r0 += QR) {
    int d = 0;
    for (; d + NT * VL <= DVp; d += NT * VL) {
      vf a[QR][NT];
      for (int r = 0; r < QR; r++)
        for (int u = 0; u < NT; u++) a[r][u] = vload(acc + int64_t(r0 + r) * DVp + d + u * VL);
      for (int b = 0; b < nb; b++) {
        const float* vb = vt[b] + d;
        const int st = strides[b];
        const float* pb = p + r0 * SK + b * TK;
        for (int lane = 0; lane < TK; lane++) {
          vf vv[NT];
          for (int u = 0; u < NT; u++) vv[u] = vload(vb + lane * st + u * VL);
          for (int r = 0; r < QR; r++) {
            const float x = pb[r * SK + lane];
            for (int u = 0; u < NT; u++) a[r][u] += x * vv[u];
          }
        }
      }
      for (int r = 0; r < QR; r++)
        for (int u = 0; u < NT; u++) vstore(acc + int64_t(r0 + r) * DVp + d + u * VL, a[r][u]);
    }
    for (; d < DVp; d += VL) {
      vf a[QR];
      for (int r = 0; r < QR; r++) a[r] = vload(acc + int64_t(r0 + r) * DVp + d);
      for (int b = 0; b < nb; b++)
        for (int lane = 0; lane < TK; lane++) {
          const vf vv = vload(vt[b] + lane * strides[b] + d);
          for (int r = 0; r < QR; r++) a[r] += p[(r0 + r) * SK + b * TK + lane] * vv;
        }
      for (int r = 0; r < QR; r++) vstore(acc + int64_t(r0 + r) * DVp + d, a[r]);
    }
  }
}

// ---- visibility -----------------------------------------------------------------------------

struct TileInfo {
  int32_t pos[TK];
  int64_t pmin, pmax;
  bool all_valid, any_valid;
  int64_t bj;  // the single block-sparse key block of the tile, or -1 when it spans several
};

static void tile_info(const AttentionArgs& a, const KvSegment& sg, int64_t t, TileInfo& ti) {
  tile_positions(sg, t, ti.pos);
  ti.pmin = INT64_MAX;
  ti.pmax = INT64_MIN;
  ti.all_valid = true;
  ti.any_valid = false;
  for (int lane = 0; lane < TK; lane++) {
    const int64_t p = ti.pos[lane];
    if (p < 0) { ti.all_valid = false; continue; }
    ti.any_valid = true;
    ti.pmin = std::min(ti.pmin, p);
    ti.pmax = std::max(ti.pmax, p);
  }
  ti.bj = -1;
  if (a.bs_block > 0 && ti.any_valid && floor_div(ti.pmin, a.bs_block) == floor_div(ti.pmax, a.bs_block))
    ti.bj = floor_div(ti.pmin, a.bs_block);
}

// Causal / window / block-sparse part of the rule for one (query position, head, key position).
static inline bool base_visible(const AttentionArgs& a, int64_t qp, int h, int64_t kp) {
  if (a.causal && kp > qp) return false;
  if (a.window > 0 && qp - kp >= a.window) return false;
  if (a.bs_block > 0) {
    const int64_t bi = floor_div(qp, a.bs_block), bj = floor_div(kp, a.bs_block);
    if (!(bi - bj < a.bs_local || (bj + int64_t(h) * a.bs_head_step + 1) % a.bs_vert == 0)) return false;
  }
  return true;
}

// 0 = no lane visible, 1 = every lane visible, 2 = decide per lane. Conservative: 2 is always safe.
static inline int classify(const AttentionArgs& a, const AttnSeq& sq, const TileInfo& ti, int64_t qp, int h,
                           int64_t slo, int64_t shi) {
  if (!ti.all_valid || sq.mask) return 2;
  bool none = false, partial = false;
  if (a.causal) {
    if (ti.pmin > qp) none = true;
    else if (ti.pmax > qp) partial = true;
  }
  if (!none && a.window > 0) {
    if (qp - ti.pmax >= a.window) none = true;
    else if (qp - ti.pmin >= a.window) partial = true;
  }
  if (!none && a.bs_block > 0) {
    if (ti.bj < 0) partial = true;
    else {
      const int64_t bi = floor_div(qp, a.bs_block);
      if (!(bi - ti.bj < a.bs_local || (ti.bj + int64_t(h) * a.bs_head_step + 1) % a.bs_vert == 0)) none = true;
    }
  }
  if (none) return (shi > slo && ti.pmax >= slo && ti.pmin < shi) ? 2 : 0;  // a span may still admit keys
  return partial ? 2 : 1;
}

static inline uint16_t lane_bits(const AttentionArgs& a, const AttnSeq& sq, const TileInfo& ti, int64_t qp, int h,
                                 int64_t row, int64_t base, int64_t slo, int64_t shi, int64_t ncols) {
  uint16_t bits = 0;
  const uint8_t* mrow = sq.mask ? sq.mask + ((sq.mask_heads == 1 ? 0 : h) * sq.n_q + row) * ncols : nullptr;
  for (int lane = 0; lane < TK; lane++) {
    const int64_t kp = ti.pos[lane];
    if (kp < 0) continue;
    bool vis = base_visible(a, qp, h, kp) || (kp >= slo && kp < shi);
    if (vis && mrow && !mrow[base + lane]) vis = false;
    if (vis) bits |= uint16_t(1u << lane);
  }
  return bits;
}

// ---- one task: a unit's query vectors over a range of its sequence's tiles ----------------------

static int64_t seq_cols(const AttnSeq& sq) {
  int64_t n = 0;
  for (int i = 0; i < sq.n_segs; i++) n += sq.segs[i].n;
  return n;
}

static void run_task(const Ctx& c, const Unit& u, int64_t tb, int64_t te, float* part) {
  const AttentionArgs& a = *c.a;
  const AttnSeq& sq = c.seqs[u.seq];
  const std::vector<TileRef>& tiles = c.tiles[u.seq];
  const int D = c.D, DVp = c.DVp, nqv = u.nqv;
  const int nqv_pad = int(round_up(nqv, QR));
  const int64_t ncols = seq_cols(sq);
  Scratch& S = scratch();
  float* q = grow(S.q, size_t(nqv_pad) * D);
  float* sc = grow(S.s, size_t(nqv_pad) * SK);
  float* acc = grow(S.acc, size_t(nqv_pad) * DVp);
  float* m = grow(S.m, size_t(nqv_pad));
  float* l = grow(S.l, size_t(nqv_pad));
  int32_t* row = grow(S.row, size_t(nqv));
  int32_t* head = grow(S.head, size_t(nqv));
  int32_t* slo = grow(S.slo, size_t(nqv));
  int32_t* shi = grow(S.shi, size_t(nqv));
  uint16_t* vis = grow(S.vis, size_t(BT) * nqv);
  uint8_t* full = grow(S.full, size_t(BT));
  float* kbuf = grow(S.kt, size_t(D) * TK);
  float* vbuf = grow(S.vt, size_t(BT) * TK * DVp);

  int64_t qpmin = INT64_MAX, qpmax = INT64_MIN;
  bool any_span = false;
  for (int i = 0; i < nqv; i++) {
    const int64_t k = u.k0 + i;
    row[i] = int32_t(k / c.G);
    head[i] = int32_t(u.g * c.G + k % c.G);
    const int64_t qp = a.q_pos[sq.q_begin + row[i]];
    qpmin = std::min(qpmin, qp);
    qpmax = std::max(qpmax, qp);
    slo[i] = shi[i] = 0;
    for (int s = 0; s < sq.n_spans; s++)
      if (qp >= sq.spans[2 * s] && qp < sq.spans[2 * s + 1]) {
        slo[i] = sq.spans[2 * s];
        shi[i] = sq.spans[2 * s + 1];
        any_span = true;
        break;
      }
    std::memcpy(q + int64_t(i) * D, a.q + ((sq.q_begin + row[i]) * a.n_heads + head[i]) * int64_t(D), size_t(D) * 4);
  }
  std::memset(q + int64_t(nqv) * D, 0, size_t(nqv_pad - nqv) * D * 4);
  for (int i = 0; i < nqv_pad; i++) { m[i] = -INFINITY; l[i] = 0.f; }
  std::memset(acc, 0, size_t(nqv_pad) * DVp * 4);

  TileInfo info[BT];
  int64_t blk[BT];
  int nb = 0;

  auto flush = [&]() {
    const int cols = nb * TK;
    // Scores for every tile of the block, then scale, soft-cap and masks.
    for (int b = 0; b < nb; b++) {
      const TileRef& tr = tiles[size_t(blk[b])];
      const KvSegment& sg = sq.segs[tr.seg];
      scores_tile(q, nqv_pad, D, k_tile(sg, c.H, D, u.g, tr.t, kbuf), sc, b * TK);
    }
    for (int i = 0; i < nqv_pad; i++) {
      float* s = sc + i * SK;
      for (int j = 0; j < cols; j += VL) {
        vf x = vload(s + j) * a.scale;
        if (a.softcap > 0.f) x = a.softcap * vtanh(x * (1.0f / a.softcap));
        vstore(s + j, x);
      }
      if (i >= nqv) continue;
      for (int b = 0; b < nb; b++) {
        if (full[b]) continue;
        const uint16_t bits = vis[b * nqv + i];
        for (int lane = 0; lane < TK; lane++)
          if (!(bits >> lane & 1u)) s[b * TK + lane] = -INFINITY;
      }
    }
    // Online softmax: P = exp(s - m_new) in place, rescale what was accumulated so far.
    for (int i = 0; i < nqv; i++) {
      float* s = sc + i * SK;
      vf vm = vsplat(-INFINITY);
      for (int j = 0; j < cols; j += VL) vm = vmax(vm, vload(s + j));
      const float bm = hmax(vm);
      if (bm == -INFINITY) {
        std::memset(s, 0, size_t(cols) * 4);
        continue;
      }
      const float nm = bm > m[i] ? bm : m[i];
      const float corr = m[i] == -INFINITY ? 0.f : std::exp(m[i] - nm);
      if (corr != 1.f) {
        float* ac = acc + int64_t(i) * DVp;
        for (int d = 0; d < DVp; d += VL) vstore(ac + d, vload(ac + d) * corr);
        l[i] *= corr;
      }
      m[i] = nm;
      vf sum = vsplat(0.f);
      for (int j = 0; j < cols; j += VL) {
        const vf x = vload(s + j);
        const vu keep = (vu)(x > vsplat(-INFINITY));
        const vf p = as_f(as_u(vexp(x - nm)) & keep);
        sum += p;
        vstore(s + j, p);
      }
      l[i] += hsum(sum);
    }
    for (int i = nqv; i < nqv_pad; i++) std::memset(sc + i * SK, 0, size_t(cols) * 4);
    // P . V over the whole block
    const float* vts[BT];
    int strides[BT];
    for (int b = 0; b < nb; b++) {
      const TileRef& tr = tiles[size_t(blk[b])];
      vts[b] = v_tile(sq.segs[tr.seg], c.H, c.DV, DVp, u.g, tr.t, info[b].pos, vbuf + size_t(b) * TK * DVp, strides[b]);
    }
    pv_block(sc, nqv_pad, DVp, vts, strides, nb, acc);
    nb = 0;
  };

  for (int64_t ti = tb; ti < te; ti++) {
    const TileRef& tr = tiles[size_t(ti)];
    TileInfo& inf = info[nb];
    tile_info(a, sq.segs[tr.seg], tr.t, inf);
    if (!inf.any_valid) continue;
    // Whole-unit rejection before any per-vector work (the common case past the causal frontier).
    if (!any_span && ((a.causal && inf.pmin > qpmax) || (a.window > 0 && qpmin - inf.pmax >= a.window))) continue;
    bool all = true, anyv = false;
    for (int i = 0; i < nqv; i++) {
      const int64_t qp = a.q_pos[sq.q_begin + row[i]];
      const int cls = classify(a, sq, inf, qp, head[i], slo[i], shi[i]);
      uint16_t bits;
      if (cls == 0) bits = 0;
      else if (cls == 1) bits = 0xffff;
      else bits = lane_bits(a, sq, inf, qp, head[i], row[i], tr.base, slo[i], shi[i], ncols);
      vis[nb * nqv + i] = bits;
      all &= bits == 0xffff;
      anyv |= bits != 0;
    }
    if (!anyv) continue;
    full[nb] = all;
    blk[nb] = ti;
    if (++nb == BT) flush();
  }
  if (nb) flush();

  if (part) {
    // Partial result of a split: [nqv][2 + DVp] = m, l, unnormalised acc.
    for (int i = 0; i < nqv; i++) {
      float* p = part + int64_t(i) * (2 + DVp);
      p[0] = m[i];
      p[1] = l[i];
      std::memcpy(p + 2, acc + int64_t(i) * DVp, size_t(DVp) * 4);
    }
    return;
  }
  for (int i = 0; i < nqv; i++) {
    float* o = a.out + ((sq.q_begin + row[i]) * a.n_heads + head[i]) * int64_t(c.DV);
    const float inv = l[i] > 0.f ? 1.0f / l[i] : 0.f;  // a query that sees nothing outputs zeros
    const float* ac = acc + int64_t(i) * DVp;
    for (int d = 0; d < c.DV; d++) o[d] = ac[d] * inv;
  }
}

// Merges the split partials of one unit into the output.
static void merge_unit(const Ctx& c, const Unit& u, const float* part) {
  const AttentionArgs& a = *c.a;
  const AttnSeq& sq = c.seqs[u.seq];
  const int DVp = c.DVp;
  const int64_t pstride = int64_t(u.nqv) * (2 + DVp);
  std::vector<float> accv(static_cast<size_t>(DVp));
  for (int i = 0; i < u.nqv; i++) {
    const int64_t k = u.k0 + i;
    const int64_t r = k / c.G;
    const int h = int(u.g * c.G + k % c.G);
    float M = -INFINITY;
    for (int s = 0; s < u.splits; s++) M = std::max(M, part[s * pstride + int64_t(i) * (2 + DVp)]);
    float* o = a.out + ((sq.q_begin + r) * a.n_heads + h) * int64_t(c.DV);
    if (M == -INFINITY) {
      for (int d = 0; d < c.DV; d++) o[d] = 0.f;
      continue;
    }
    float L = 0.f;
    std::fill(accv.begin(), accv.end(), 0.f);
    for (int s = 0; s < u.splits; s++) {
      const float* p = part + s * pstride + int64_t(i) * (2 + DVp);
      if (p[0] == -INFINITY) continue;
      const float w = std::exp(p[0] - M);
      L += w * p[1];
      for (int d = 0; d < DVp; d += VL) vstore(accv.data() + d, vload(accv.data() + d) + w * vload(p + 2 + d));
    }
    const float inv = L > 0.f ? 1.0f / L : 0.f;
    for (int d = 0; d < c.DV; d++) o[d] = accv[size_t(d)] * inv;
  }
}

}  // namespace attn

static void attention(const AttentionArgs& a) {
  using namespace attn;
  // The single-sequence form is one sequence with one row-layout segment.
  KvSegment legacy_seg;
  AttnSeq legacy_seq;
  const AttnSeq* seqs = a.seqs;
  int n_seqs = a.n_seqs;
  if (n_seqs == 0) {
    legacy_seg.dtype = a.kv_dtype;
    legacy_seg.layout = kKvRows;
    legacy_seg.k = a.k;
    legacy_seg.v = a.v;
    legacy_seg.pos = a.k_pos;
    legacy_seg.n = a.n_kv;
    legacy_seq.q_begin = 0;
    legacy_seq.n_q = a.n_q;
    legacy_seq.segs = &legacy_seg;
    legacy_seq.n_segs = 1;
    legacy_seq.mask = a.mask;
    legacy_seq.mask_heads = a.mask_heads;
    seqs = &legacy_seq;
    n_seqs = 1;
  }
  Ctx c;
  c.a = &a;
  c.seqs = seqs;
  c.H = a.n_kv_heads;
  c.G = a.n_heads / a.n_kv_heads;
  c.D = a.head_dim;
  c.DV = a.v_dim;
  c.DVp = int(round_up(a.v_dim, VL));
  // Query vectors per unit: enough to amortise each tile's load, few enough that acc stays in L2.
  c.QB = int(std::max<int64_t>(QR, std::min<int64_t>(64, 16384 / c.DVp / QR * QR)));
  c.tiles.resize(size_t(n_seqs));
  std::vector<Unit> units;
  for (int s = 0; s < n_seqs; s++) {
    const AttnSeq& sq = seqs[s];
    int64_t base = 0;
    for (int i = 0; i < sq.n_segs; i++) {
      const int64_t nt = (sq.segs[i].n + TK - 1) / TK;
      for (int64_t t = 0; t < nt; t++) c.tiles[size_t(s)].push_back({i, t, base + t * TK});
      base += sq.segs[i].n;
    }
    const int64_t total = sq.n_q * c.G;
    for (int g = 0; g < c.H; g++)
      for (int64_t k0 = 0; k0 < total; k0 += c.QB)
        units.push_back({s, g, k0, int(std::min<int64_t>(c.QB, total - k0)), 1, 0});
  }
  if (units.empty()) return;
  // Split-K when the units alone cannot keep every thread busy (decode, short batches).
  const int64_t target = int64_t(pool_threads()) * 4;
  int64_t part_floats = 0;
  std::vector<std::pair<int, int>> tasks;  // (unit, split)
  for (size_t ui = 0; ui < units.size(); ui++) {
    Unit& u = units[ui];
    const int64_t nt = int64_t(c.tiles[size_t(u.seq)].size());
    if (int64_t(units.size()) < target) {
      const int64_t want = (target + int64_t(units.size()) - 1) / int64_t(units.size());
      u.splits = int(std::max<int64_t>(1, std::min<int64_t>(want, nt / kMinSplitTiles)));
    }
    if (u.splits > 1) {
      u.part = part_floats;
      part_floats += int64_t(u.splits) * u.nqv * (2 + c.DVp);
    }
    for (int sp = 0; sp < u.splits; sp++) tasks.push_back({int(ui), sp});
  }
  std::vector<float> parts(static_cast<size_t>(part_floats));
  parallel_for(int64_t(tasks.size()), 1, [&](int64_t t0, int64_t t1) {
    for (int64_t ti = t0; ti < t1; ti++) {
      const Unit& u = units[size_t(tasks[size_t(ti)].first)];
      const int sp = tasks[size_t(ti)].second;
      const int64_t nt = int64_t(c.tiles[size_t(u.seq)].size());
      const int64_t tb = nt * sp / u.splits, te = nt * (sp + 1) / u.splits;
      float* part = u.splits > 1 ? parts.data() + u.part + int64_t(sp) * u.nqv * (2 + c.DVp) : nullptr;
      run_task(c, u, tb, te, part);
    }
  });
  if (part_floats == 0) return;
  parallel_for(int64_t(units.size()), 1, [&](int64_t u0, int64_t u1) {
    for (int64_t ui = u0; ui < u1; ui++)
      if (units[size_t(ui)].splits > 1) merge_unit(c, units[size_t(ui)], parts.data() + units[size_t(ui)].part);
  });
}
