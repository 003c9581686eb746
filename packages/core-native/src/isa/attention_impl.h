// Attention kernels, included into kernels_impl.h inside the variant namespace (MLX_NS), so the
// vector helpers (vf, vload, load_any, decode_q8, decode_q4, vexp, vtanh, ...) of that file are in scope.
// Not a standalone header: no include guard on purpose. Split by job:
//   attention_load.h   K/V tile loaders (conversion, dequantization, transposition) with prefetch
//   attention_micro.h  score and P.V micro-kernels, incl. the in-register decode paths
//   this file          visibility, the per-unit flash loop, split-K planning and merge, the entry point
//
// One kernel serves prefill and decode, a batch of sequences and every KV storage kind:
// - Work unit = (sequence, KV head, up to QB "query vectors"), a query vector being one (row, head) of
//   the heads that share that KV head. Each K/V tile is loaded (converted/dequantized) once per unit
//   and used by all its query vectors.
// - Keys come in 16-slot tiles, head-major (a head's keys are one sequential stream). K is consumed
//   transposed ([D][16]), so scores for 16 keys are plain vector FMAs with a broadcast query element
//   (no horizontal sums); cache storage is already laid out that way (KvSegment kKvTiles), the legacy
//   row layout is transposed into scratch per tile.
// - Flash-style: blocks of BT tiles, scores -> online softmax (f32, running max and sum) -> P.V into
//   f32 accumulators; a tile nobody can see is skipped before it is read.
// - Decode (at most QR query vectors per unit): K/V are converted straight into the FMA operands.
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
// subnormals and inf/nan included), else the generic bit manipulation of primitives.h (load_f16).
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
  int g;          // KV head (the first one when gn > 1)
  int64_t k0;     // first query vector (row-major over (row, head-in-group))
  int nqv;
  int splits;
  int64_t part;   // offset of this unit's partials (floats), when splits > 1
  // Multi-head decode (gn > 1, batched calls only): KV heads g .. g + gn - 1, one query vector each (one
  // query row, one query head per KV head: Phi-3's multi-head attention). The heads share the unit's
  // setup and per-block bookkeeping, which dominate a short context's unit; each head's accumulators
  // take their terms in the order they have alone, so every output is bit-identical.
  int gn = 1;
};

// Query vector i of unit u: its row (within the sequence), query head and KV head.
static inline void unit_qv(const Unit& u, int G, int i, int32_t& row, int32_t& head, int32_t& kvh) {
  if (u.gn > 1) {
    row = 0;
    head = kvh = u.g + i;
    return;
  }
  const int64_t k = u.k0 + i;
  row = int32_t(k / G);
  head = int32_t(u.g * G + k % G);
  kvh = u.g;
}

// Everything about one call that tasks only read.
struct Ctx {
  const AttentionArgs* a;
  const AttnSeq* seqs;
  int H, G, D, DV, DVp, QB;
  vec<vec<TileRef>> tiles;  // per sequence
  vec<signed char> few_dt;  // per sequence: the DT of the few-row kernels (0 f32, 1 f16, 2 bf16) when
                            // every segment is in tile layout of that one dtype, else -1
};

struct Scratch {
  vec<float> q, kt, vt, s, acc, m, l, qsum;
  vec<int32_t> row, head, slo, shi, kvh;
  vec<uint16_t> vis;  // [BT][nqv] visible-lane bits of the block's tiles
  vec<uint8_t> full;  // [BT] tile visible to every query vector in every lane
};
static Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}
template <class T> static inline T* grow(vec<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

#include "attention_load.h"
#include "attention_micro.h"

// The largest lane of v, or a NaN lane's value when v holds one. A tree of vector maxes where no lane
// is NaN (the lane-by-lane compare-and-branch form was ~15 % of a head_dim-96 prefill in perf); which
// zero comes out of max(-0, +0) does not matter to the caller (x - m and exp(m - m') are the same).
static inline float nan_sticky_hmax(vf v) {
#if defined(__AVX512F__) && MLX_VL == 16
  if (_mm512_cmp_ps_mask((__m512)v, (__m512)v, _CMP_UNORD_Q) == 0) return _mm512_reduce_max_ps((__m512)v);
#else
  const vu nan = (vu)(v != v);
  uint32_t any = 0;
  for (int i = 0; i < VL; i++) any |= nan[i];
  if (!any) return hmax(v);
#endif
  for (int i = 0; i < VL; i++)
    if (v[i] != v[i]) return v[i];
  return hmax(v);
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

// The few-row kernels for 1, 2 or 4 (padded) rows; mh: each row over its own KV head's tiles
// (kts[r * BT + b], v[r]; see Unit::gn).
template <int DT>
static void scores_few_rows(int nqv_pad, bool mh, const float* q, int D, const uint8_t* const* kts, int nb, float* sc) {
  if (nqv_pad == 1) scores_few<DT, 1>(q, D, kts, nb, sc);
  else if (nqv_pad == 2) mh ? scores_few<DT, 2, true>(q, D, kts, nb, sc) : scores_few<DT, 2>(q, D, kts, nb, sc);
  else if constexpr (QR / 2 >= 4) mh ? scores_few<DT, 4, true>(q, D, kts, nb, sc) : scores_few<DT, 4>(q, D, kts, nb, sc);
  else scores_few<DT, 4>(q, D, kts, nb, sc);
}
template <int DT>
static void pv_few_rows(int nqv_pad, bool mh, const float* p, int DVp, const FewRows* v, int nb, float* acc) {
  if (nqv_pad == 1) pv_few<DT, 1>(p, DVp, v, nb, acc);
  else if (nqv_pad == 2) mh ? pv_few<DT, 2, true>(p, DVp, v, nb, acc) : pv_few<DT, 2>(p, DVp, v, nb, acc);
  else if constexpr (QR / 2 >= 4) mh ? pv_few<DT, 4, true>(p, DVp, v, nb, acc) : pv_few<DT, 4>(p, DVp, v, nb, acc);
  else pv_few<DT, 4>(p, DVp, v, nb, acc);
}

static void run_task(const Ctx& c, const Unit& u, int64_t tb, int64_t te, float* part) {
  const AttentionArgs& a = *c.a;
  const AttnSeq& sq = c.seqs[u.seq];
  const vec<TileRef>& tiles = c.tiles[u.seq];
  const int D = c.D, DVp = c.DVp, nqv = u.nqv;
  // Few query vectors over f32 / f16 / bf16 tiles (decode without much GQA): the few-row kernels, padded
  // to 1/2/4 rows instead of QR (attention_micro.h; same results).
  const int few_dt = c.few_dt[size_t(u.seq)];
  const bool few = few_dt >= 0 && nqv <= QR / 2;
  const bool mh = u.gn > 1;  // only ever built where the few-row kernels run (attention(), below)
  const int nqv_pad = few ? (nqv <= 1 ? 1 : nqv <= 2 ? 2 : 4) : int(round_up(nqv, QR));
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
  float* kbuf = grow(S.kt, size_t(D) * TK * 2);  // two tiles (scores_tiles)
  float* vbuf = grow(S.vt, size_t(BT) * TK * DVp * (mh ? nqv_pad : 1));
  int32_t* kvh = grow(S.kvh, size_t(nqv_pad));  // KV head of each query vector (padding: the first's)

  int64_t qpmin = INT64_MAX, qpmax = INT64_MIN;
  bool any_span = false;
  for (int i = 0; i < nqv_pad; i++) kvh[i] = u.g;
  for (int i = 0; i < nqv; i++) {
    unit_qv(u, c.G, i, row[i], head[i], kvh[i]);
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
  float* qsum = grow(S.qsum, size_t(QR) * (D / 32 + 1));  // decode, 8-bit K: per-group sums of q
  int qsum_group = 0;

  auto flush = [&]() {
    const int cols = nb * TK;
    // Scores for every tile of the block, then scale, soft-cap and masks.
    const bool decode = nqv_pad == QR;
    if (few) {
      const uint8_t* kts[kFewMaxRows * BT];  // every K tile read in place (f32: k_tile only prefetches); [row][BT] with mh
      for (int r = 0; r < (mh ? nqv_pad : 1); r++)
        for (int b = 0; b < nb; b++) {
          const TileRef& tr = tiles[size_t(blk[b])];
          const KvSegment& sg = sq.segs[tr.seg];
          kts[r * BT + b] = few_dt == 0 ? reinterpret_cast<const uint8_t*>(k_tile(sg, c.H, D, kvh[r], tr.t, kbuf))
                                        : sg.k + (kvh[r] * (sg.capacity / TK) + tr.t) * int64_t(D) * TK * 2;
        }
      if (few_dt == 0) scores_few_rows<0>(nqv_pad, mh, q, D, kts, nb, sc);
      else if (few_dt == 1) scores_few_rows<1>(nqv_pad, mh, q, D, kts, nb, sc);
      else scores_few_rows<2>(nqv_pad, mh, q, D, kts, nb, sc);
    } else for (int b = 0; b < nb; b++) {
      const TileRef& tr = tiles[size_t(blk[b])];
      const KvSegment& sg = sq.segs[tr.seg];
      const int dk = decode ? direct_k(sg) : 0;
      if (dk == 0 && kScoreTiles == 2 && b + 1 < nb && !(decode && direct_k(sq.segs[tiles[size_t(blk[b + 1])].seg]))) {
        // Two tiles in one pass (scores_tiles; same results as one at a time).
        const TileRef& tr2 = tiles[size_t(blk[b + 1])];
        const float* kts[2] = {k_tile(sg, c.H, D, u.g, tr.t, kbuf), k_tile(sq.segs[tr2.seg], c.H, D, u.g, tr2.t, kbuf + int64_t(D) * TK)};
        scores_tiles<kScoreTiles>(q, nqv_pad, D, kts, sc, b * TK);
        b++;
        continue;
      }
      switch (dk) {
        case 1: scores_direct<1>(q, nullptr, D, sg, u.g, tr.t, sc, b * TK); break;
        case 2: scores_direct<2>(q, nullptr, D, sg, u.g, tr.t, sc, b * TK); break;
        case 3:
          if (qsum_group != sg.group) {  // per-group sums of the query vectors, once per group size
            qsum_group = sg.group;
            const int ng = D / sg.group;
            for (int r = 0; r < QR; r++)
              for (int gi = 0; gi < ng; gi++) {
                float t = 0.f;
                for (int d = gi * sg.group; d < (gi + 1) * sg.group; d++) t += q[r * D + d];
                qsum[r * ng + gi] = t;
              }
          }
          scores_direct<3>(q, qsum, D, sg, u.g, tr.t, sc, b * TK);
          break;
        default: {
          const float* kt = k_tile(sg, c.H, D, u.g, tr.t, kbuf);
          scores_tiles<1>(q, nqv_pad, D, &kt, sc, b * TK);
        }
      }
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
      // NaN-sticky max: a NaN score makes the row's max NaN, so the NaN reaches the output instead of
      // the row being taken for fully masked (vmax/hmax skip NaN) and written as zeros.
      vf vm = vsplat(-INFINITY);
      for (int j = 0; j < cols; j += VL) {
        const vf x = vload(s + j);
        vm = ((x > vm) | (x != x)) ? x : vm;
      }
      const float bm = nan_sticky_hmax(vm);
      if (bm == -INFINITY) {
        std::memset(s, 0, size_t(cols) * 4);
        continue;
      }
      const float nm = (bm > m[i] || std::isnan(bm)) ? bm : m[i];
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
        const vu keep = (vu)(x != vsplat(-INFINITY));  // masked lanes are exactly -inf; NaN is kept (-> NaN)
        const vf p = as_f(as_u(vexp(x - nm)) & keep);
        sum += p;
        vstore(s + j, p);
      }
      l[i] += hsum(sum);
    }
    for (int i = nqv; i < nqv_pad; i++) std::memset(sc + i * SK, 0, size_t(cols) * 4);
    // P . V over the whole block: in place when every tile allows it (same format, all lanes valid).
    if (decode) {
      const KvSegment* segs[BT];
      int64_t tl[BT];
      int kind = -1;
      for (int b = 0; b < nb && kind != 0; b++) {
        const TileRef& tr = tiles[size_t(blk[b])];
        segs[b] = &sq.segs[tr.seg];
        tl[b] = tr.t;
        bool valid = true;
        for (int lane = 0; lane < TK; lane++) valid &= info[b].pos[lane] >= 0;
        const int k = valid ? direct_v(*segs[b], c.DV) : 0;
        kind = kind < 0 || kind == k ? k : 0;
      }
      if (kind > 0) {
        if (kind == 1) pv_direct<1>(sc, c.DV, segs, tl, nb, u.g, acc);
        else if (kind == 2) pv_direct<2>(sc, c.DV, segs, tl, nb, u.g, acc);
        else if (kind == 3) pv_direct<3>(sc, c.DV, segs, tl, nb, u.g, acc);
        else pv_direct<4>(sc, c.DV, segs, tl, nb, u.g, acc);
        nb = 0;
        return;
      }
    }
    if (few) {
      // 16-bit V rows in place when every lane of the block is valid (else v_tile's zero rows, as f32).
      bool in_place = few_dt != 0 && c.DV == DVp;
      for (int b = 0; b < nb && in_place; b++) in_place = info[b].all_valid;
      FewRows fr[kFewMaxRows];  // [row] with mh, else fr[0] for every row
      for (int r = 0; r < (mh ? nqv_pad : 1); r++)
        for (int b = 0; b < nb; b++) {
          const TileRef& tr = tiles[size_t(blk[b])];
          const KvSegment& sg = sq.segs[tr.seg];
          if (in_place) {
            fr[r].rows[b] = sg.v + (kvh[r] * sg.capacity + tr.t * TK) * int64_t(c.DV) * 2;
            fr[r].stride[b] = c.DV;
          } else {
            fr[r].rows[b] = reinterpret_cast<const uint8_t*>(v_tile(sg, c.H, c.DV, DVp, kvh[r], tr.t, info[b].pos,
                                                                    vbuf + (size_t(r) * BT + size_t(b)) * TK * DVp, fr[r].stride[b]));
          }
        }
      if (!in_place) pv_few_rows<0>(nqv_pad, mh, sc, DVp, fr, nb, acc);
      else if (few_dt == 1) pv_few_rows<1>(nqv_pad, mh, sc, DVp, fr, nb, acc);
      else pv_few_rows<2>(nqv_pad, mh, sc, DVp, fr, nb, acc);
      nb = 0;
      return;
    }
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
  vec<float> accv(static_cast<size_t>(DVp));
  for (int i = 0; i < u.nqv; i++) {
    int32_t r, h, kvh;
    unit_qv(u, c.G, i, r, h, kvh);
    float M = -INFINITY;
    for (int s = 0; s < u.splits; s++) {  // NaN-sticky, like the per-block max
      const float ms = part[s * pstride + int64_t(i) * (2 + DVp)];
      M = (ms > M || std::isnan(ms)) ? ms : M;
    }
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
  c.few_dt.assign(size_t(n_seqs), -1);
  vec<Unit> units;
  for (int s = 0; s < n_seqs; s++) {
    const AttnSeq& sq = seqs[s];
    int64_t base = 0;
    for (int i = 0; i < sq.n_segs; i++) {
      const KvSegment& sg = sq.segs[i];
      const int dt = sg.layout != kKvTiles ? -1 : sg.dtype == kF32 ? 0 : sg.dtype == kF16 ? 1 : sg.dtype == kBF16 ? 2 : -1;
      if (i == 0) c.few_dt[size_t(s)] = (signed char)dt;
      else if (dt != c.few_dt[size_t(s)]) c.few_dt[size_t(s)] = -1;
      const int64_t nt = (sq.segs[i].n + TK - 1) / TK;
      for (int64_t t = 0; t < nt; t++) c.tiles[size_t(s)].push_back({i, t, base + t * TK});
      base += sq.segs[i].n;
    }
    const int64_t total = sq.n_q * c.G;
    // Multi-head decode (Unit::gn): one query row, one query head per KV head, and the few-row kernels
    // (tile-layout f32 / f16 / bf16): up to QR / 2 KV heads per unit (4 with AVX-512, 2 with AVX2), in a
    // batched call only. Measured (packages/cache/bench/attention-batch.mjs --storage f16, Phi-3.5's 32
    // heads x 96, 8 sequences x 48 keys): 1.10-1.35x a step, the per-unit setup shared by four heads; one
    // sequence over 2048 keys: 0.95x on one thread from DRAM, 1.00-1.02x on two, so a single sequence
    // keeps one head per unit. Either way every output is the same bits.
    constexpr int kHeadsPerUnit = QR / 2;
    if (kHeadsPerUnit > 1 && n_seqs > 1 && c.G == 1 && sq.n_q == 1 && c.few_dt[size_t(s)] >= 0) {
      for (int g = 0; g < c.H; g += kHeadsPerUnit) {
        const int gn = std::min(kHeadsPerUnit, c.H - g);
        units.push_back({s, g, 0, gn, 1, 0, gn});
      }
      continue;
    }
    for (int g = 0; g < c.H; g++)
      for (int64_t k0 = 0; k0 < total; k0 += c.QB)
        units.push_back({s, g, k0, int(std::min<int64_t>(c.QB, total - k0)), 1, 0});
  }
  if (units.empty()) return;
  // Split-K when the units alone cannot keep every thread busy (decode, short batches).
  const int64_t target = int64_t(pool_threads()) * 4;
  // Counted per KV head: a multi-head unit (Unit::gn) is gn units for this decision, so grouping heads
  // never changes which calls split (a split changes the rounding of the merged result).
  int64_t head_units = 0;
  for (const Unit& u : units) head_units += u.gn;
  int64_t part_floats = 0;
  vec<std::pair<int, int>> tasks;  // (unit, split)
  for (size_t ui = 0; ui < units.size(); ui++) {
    Unit& u = units[ui];
    const int64_t nt = int64_t(c.tiles[size_t(u.seq)].size());
    if (head_units < target) {
      const int64_t want = (target + head_units - 1) / head_units;
      u.splits = int(std::max<int64_t>(1, std::min<int64_t>(want, nt / kMinSplitTiles)));
    }
    if (u.splits > 1) {
      u.part = part_floats;
      part_floats += int64_t(u.splits) * u.nqv * (2 + c.DVp);
    }
    for (int sp = 0; sp < u.splits; sp++) tasks.push_back({int(ui), sp});
  }
  vec<float> parts(static_cast<size_t>(part_floats));
  parallel_for(int64_t(tasks.size()), 1, [&](int64_t t0, int64_t t1) {
    for (int64_t ti = t0; ti < t1; ti++) {
      const Unit& u = units[size_t(tasks[size_t(ti)].first)];
      const int sp = tasks[size_t(ti)].second;
      const int64_t nt = int64_t(c.tiles[size_t(u.seq)].size());
      const int64_t tb = nt * sp / u.splits, te = nt * (sp + 1) / u.splits;
      float* part = u.splits > 1 ? parts.data() + u.part + int64_t(sp) * u.nqv * (2 + c.DVp) : nullptr;
      if (ti + 1 < t1) {  // the next task's first tile, while this one runs (prefetch_unit_start)
        const Unit& un = units[size_t(tasks[size_t(ti + 1)].first)];
        const vec<TileRef>& tl = c.tiles[size_t(un.seq)];
        const int64_t ntn = int64_t(tl.size()), tbn = ntn * tasks[size_t(ti + 1)].second / un.splits;
        if (tbn < ntn) prefetch_unit_start(c.seqs[un.seq].segs[tl[size_t(tbn)].seg], c.D, c.DV, un.g, tl[size_t(tbn)].t);
      }
      run_task(c, u, tb, te, part);
    }
  });
  if (part_floats == 0) return;
  parallel_for(int64_t(units.size()), 1, [&](int64_t u0, int64_t u1) {
    for (int64_t ui = u0; ui < u1; ui++)
      if (units[size_t(ui)].splits > 1) merge_unit(c, units[size_t(ui)], parts.data() + units[size_t(ui)].part);
  });
}
