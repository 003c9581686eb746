// Micro-kernels of the attention kernel (see attention_impl.h, which includes this file inside
// namespace attn): scores of query vectors against a K tile, P.V accumulation over a block, and the
// decode paths that read f16 / bf16 / 8-bit / 4-bit storage straight into the FMA operands.
// Not a standalone header: no include guard on purpose.

// ---- micro-kernels --------------------------------------------------------------------------

// s[qv * SK + col0 + t * TK + lane] = q[qv] . K_t[:, lane] for every (padded) query vector and the NTL
// tiles kt[0 .. NTL - 1] (each [D][TK]). Two tiles at once where the registers allow (AVX-512: 8 rows x
// 2 vectors = 16 accumulators): each broadcast query element then feeds two FMAs, and twice as many
// independent chains hide the FMA latency (one tile's 8 chains were just enough for 4-cycle FMAs at 2
// per cycle, with no slack). Each score is still one chain over d ascending, so the bits do not depend
// on how many tiles go together.
template <int NTL>
static void scores_tiles(const float* q, int nqv_pad, int D, const float* const* kt, float* s, int col0) {
  for (int r0 = 0; r0 < nqv_pad; r0 += QR) {
    vf acc[QR][NTL][NT];
    for (int r = 0; r < QR; r++)
      for (int t = 0; t < NTL; t++)
        for (int u = 0; u < NT; u++) acc[r][t][u] = vsplat(0.f);
    const float* qr = q + int64_t(r0) * D;
    for (int d = 0; d < D; d++) {
      vf kv[NTL][NT];
      for (int t = 0; t < NTL; t++)
        for (int u = 0; u < NT; u++) kv[t][u] = vload(kt[t] + d * TK + u * VL);
      for (int r = 0; r < QR; r++) {
        const float x = qr[r * D + d];  // scalar * vector: a broadcast, never an add (vsplat's 0 + x)
        for (int t = 0; t < NTL; t++)
          for (int u = 0; u < NT; u++) acc[r][t][u] += x * kv[t][u];
      }
    }
    for (int r = 0; r < QR; r++)
      for (int t = 0; t < NTL; t++)
        for (int u = 0; u < NT; u++) vstore(s + (r0 + r) * SK + col0 + t * TK + u * VL, acc[r][t][u]);
  }
}
// Tiles that go together in scores_tiles (2 where 8 rows x 2 tiles of accumulators fit 32 registers).
constexpr int kScoreTiles = VL == 16 ? 2 : 1;

// acc[qv][d .. d + U * VL) += sum over the block's nb tiles and their lanes of p[qv * SK + b * TK + lane]
// * V_b[lane][d ..]; tile b's rows are strides[b] floats apart. Accumulators stay in registers across
// the whole block, each taking its terms in (tile, lane) order whatever U is.
template <int U>
static inline void pv_columns(const float* p, int r0, int DVp, int d, const float* const* vt, const int* strides, int nb, float* acc) {
  vf a[QR][U];
  for (int r = 0; r < QR; r++)
    for (int u = 0; u < U; u++) a[r][u] = vload(acc + int64_t(r0 + r) * DVp + d + u * VL);
  for (int b = 0; b < nb; b++) {
    const float* vb = vt[b] + d;
    const int st = strides[b];
    const float* pb = p + r0 * SK + b * TK;
    for (int lane = 0; lane < TK; lane++) {
      vf vv[U];
      for (int u = 0; u < U; u++) vv[u] = vload(vb + lane * st + u * VL);
      for (int r = 0; r < QR; r++) {
        const float x = pb[r * SK + lane];
        for (int u = 0; u < U; u++) a[r][u] += x * vv[u];
      }
    }
  }
  for (int r = 0; r < QR; r++)
    for (int u = 0; u < U; u++) vstore(acc + int64_t(r0 + r) * DVp + d + u * VL, a[r][u]);
}

// acc[qv][:] += P . V over the block's nb tiles for every (padded) query vector: kWide vectors of columns
// at a time (2 * NT where 8 rows of them fit the registers: AVX-512, as scores_tiles; else NT), then one.
static void pv_block(const float* p, int nqv_pad, int DVp, const float* const* vt, const int* strides, int nb, float* acc) {
  constexpr int kWide = VL == 16 ? 2 * NT : NT;
  for (int r0 = 0; r0 < nqv_pad; r0 += QR) {
    int d = 0;
    for (; d + kWide * VL <= DVp; d += kWide * VL) pv_columns<kWide>(p, r0, DVp, d, vt, strides, nb, acc);
    for (; d < DVp; d += VL) pv_columns<1>(p, r0, DVp, d, vt, strides, nb, acc);
  }
}

// ---- decode with few query vectors over float tiles ----------------------------------------------
// A decode unit holds one row x the heads that share its KV head: 1 query vector for Phi-3 / Phi-3.5
// (no GQA), 3-4 for Phi-4-mini and Gemma 3n. Padded to QR (8 with AVX-512) the kernels above spend most
// of their FMAs on zero rows, and with the real rows alone one FMA chain per row would be latency-bound.
// These kernels take RQ < QR rows and instead run independent chains side by side: the NB tiles of a
// block (scores) or DC vector chunks of the output (P.V). Every accumulator still takes its terms in the
// order scores_tiles / pv_block give them (d ascending; tile then lane ascending), so each row's result is
// bit-identical to the padded kernels' — the choice never changes an output.
// DT: 0 f32, 1 f16, 2 bf16 (3 affine 8-bit, used by the padded decode paths below). 16-bit K and V are
// converted straight into the FMA operands (exact), which the profile showed beats converting a tile
// into scratch and loading it back: with one query vector each element feeds a single FMA, so the
// scratch round trip (convert, store, reload) was most of the work.
template <int DT>
static inline vf kv_load(const uint8_t* p, int64_t i) {
  if (DT == 0) return vload(reinterpret_cast<const float*>(p) + i);
  if (DT == 1) return fast_f16(p + 2 * i);
  if (DT == 2) return load_bf16(p + 2 * i);
  return decode_q8(p + i);
}
template <int DT> constexpr int kv_esz = DT == 0 ? 4 : DT == 3 ? 1 : 2;

// Scores of RQ rows against NB K tiles ([D][TK] each, element type DT). 16-bit tiles prefetch their
// lines one block ahead as they go (f32 tiles were prefetched by k_tile).
// MH (multi-head decode: each row is the one query vector of its own KV head, see Unit::gn): row r reads
// its own tiles, kts[r * BT + b], instead of sharing kts[b]. Either way each accumulator takes its terms
// in the same order (d ascending), so a row's scores do not depend on which rows share the call.
template <int DT, int RQ, int NB, bool MH = false>
static void scores_tiles_few(const float* q, int D, const uint8_t* const* kts, float* s, int col0) {
  constexpr int esz = kv_esz<DT>;
  const int64_t ahead = int64_t(BT) * D * TK * esz;
  vf acc[RQ][NB][NT];
  for (int r = 0; r < RQ; r++)
    for (int b = 0; b < NB; b++)
      for (int u = 0; u < NT; u++) acc[r][b][u] = vsplat(0.f);
  for (int d = 0; d < D; d++) {
    const bool fetch = DT != 0 && ((d * TK * esz) & 63) == 0;
    for (int b = 0; b < NB; b++) {
      if constexpr (MH) {
        for (int r = 0; r < RQ; r++) {
          const uint8_t* kt = kts[r * BT + b];
          if (fetch) pf(kt + ahead + int64_t(d) * TK * esz);
          const float x = q[r * D + d];
          for (int u = 0; u < NT; u++) acc[r][b][u] += x * kv_load<DT>(kt, int64_t(d) * TK + u * VL);
        }
        continue;
      }
      if (fetch) pf(kts[b] + ahead + int64_t(d) * TK * esz);
      vf kv[NT];
      for (int u = 0; u < NT; u++) kv[u] = kv_load<DT>(kts[b], int64_t(d) * TK + u * VL);
      for (int r = 0; r < RQ; r++) {
        const float x = q[r * D + d];
        for (int u = 0; u < NT; u++) acc[r][b][u] += x * kv[u];
      }
    }
  }
  for (int r = 0; r < RQ; r++)
    for (int b = 0; b < NB; b++)
      for (int u = 0; u < NT; u++) vstore(s + r * SK + col0 + b * TK + u * VL, acc[r][b][u]);
}

// Vector registers the few-row kernels give to accumulators (32 with AVX-512 and NEON, 16 with AVX2).
constexpr int kFewAcc = VL == 8 ? 6 : 12;
constexpr int kFewMaxRows = 4;  // the few-row kernels' largest (padded) row count
constexpr int kFewTiles = VL == 8 ? 2 : 4;  // NB of scores_tiles_few

// The tiles left after the whole groups of kFewTiles go side by side too (a decode over 48 keys is 3
// tiles: one at a time they were three serial D-long FMA chains, the hot loop of a Phi-3.5 decode step's
// attention in perf).
template <int DT, int RQ, bool MH = false>
static void scores_few(const float* q, int D, const uint8_t* const* kts, int nb, float* s) {
  int b = 0;
  for (; b + kFewTiles <= nb; b += kFewTiles) scores_tiles_few<DT, RQ, kFewTiles, MH>(q, D, kts + b, s, b * TK);
  switch (nb - b) {
    case 3: if constexpr (kFewTiles > 3) { scores_tiles_few<DT, RQ, 3, MH>(q, D, kts + b, s, b * TK); } break;
    case 2: if constexpr (kFewTiles > 2) { scores_tiles_few<DT, RQ, 2, MH>(q, D, kts + b, s, b * TK); } break;
    case 1: scores_tiles_few<DT, RQ, 1, MH>(q, D, kts + b, s, b * TK); break;
    default: break;
  }
}

// V rows of a block for the few-row P.V: tile b's lane l row at rows[b] + l * stride[b] elements of
// type DT. 16-bit rows are only read in place when every lane of the block is valid (an invalid slot
// must read as zero, see v_tile); they then prefetch one block ahead.
struct FewRows {
  const uint8_t* rows[BT];
  int stride[BT];
};

// DC consecutive NT*VL-wide chunks of the output from d on, RQ rows (the chunks' chains side by side).
// v: the V rows of the block, shared by all rows (v[0]), or with MH row r's own (v[r]).
template <int DT, int RQ, int DC, bool MH = false>
static void pv_chunks_few(const float* p, int DVp, int d, const FewRows* v, int nb, float* acc) {
  constexpr int esz = kv_esz<DT>;
  vf a[RQ][DC][NT];
  for (int r = 0; r < RQ; r++)
    for (int c = 0; c < DC; c++)
      for (int u = 0; u < NT; u++) a[r][c][u] = vload(acc + int64_t(r) * DVp + d + (c * NT + u) * VL);
  if constexpr (MH) {
    // Each row its own V rows: the same terms in the same order (tile, then lane, ascending).
    for (int b = 0; b < nb; b++)
      for (int lane = 0; lane < TK; lane++)
        for (int r = 0; r < RQ; r++) {
          const int64_t st = v[r].stride[b];
          const uint8_t* vb = v[r].rows[b] + int64_t(d) * esz;
          if (DT != 0)
            for (int o = 0; o < DC * NT * VL * esz; o += 64) pf(vb + (lane + int64_t(BT) * TK) * st * esz + o);
          const float x = p[r * SK + b * TK + lane];
          for (int c = 0; c < DC; c++)
            for (int u = 0; u < NT; u++) a[r][c][u] += x * kv_load<DT>(vb, lane * st + (c * NT + u) * VL);
        }
  } else {
    for (int b = 0; b < nb; b++) {
      const int64_t st = v->stride[b];
      const uint8_t* vb = v->rows[b] + int64_t(d) * esz;
      const float* pb = p + b * TK;
      for (int lane = 0; lane < TK; lane++) {
        // The row's lines this call reads, a block of rows ahead (the rows of a head's tiles follow each other).
        if (DT != 0)
          for (int o = 0; o < DC * NT * VL * esz; o += 64) pf(vb + (lane + int64_t(BT) * TK) * st * esz + o);
        vf vv[DC][NT];
        for (int c = 0; c < DC; c++)
          for (int u = 0; u < NT; u++) vv[c][u] = kv_load<DT>(vb, lane * st + (c * NT + u) * VL);
        for (int r = 0; r < RQ; r++) {
          const float x = pb[r * SK + lane];
          for (int c = 0; c < DC; c++)
            for (int u = 0; u < NT; u++) a[r][c][u] += x * vv[c][u];
        }
      }
    }
  }
  for (int r = 0; r < RQ; r++)
    for (int c = 0; c < DC; c++)
      for (int u = 0; u < NT; u++) vstore(acc + int64_t(r) * DVp + d + (c * NT + u) * VL, a[r][c][u]);
}

// Calls pv_chunks_few<RQ, C> for the largest C <= DC with C chunks left (C a power of two, or DC), so a
// width that is not a multiple of DC chunks (Phi-3.5's 96 = 6 chunks with DC = 12) still runs its
// chains side by side rather than one chunk at a time.
template <int DT, int RQ, int DC, bool MH = false>
static int pv_chunks_upto(const float* p, int DVp, int d, const FewRows* v, int nb, float* acc, int left) {
  if (left >= DC) { pv_chunks_few<DT, RQ, DC, MH>(p, DVp, d, v, nb, acc); return DC; }
  if constexpr (DC > 8) if (left >= 8) { pv_chunks_few<DT, RQ, 8, MH>(p, DVp, d, v, nb, acc); return 8; }
  if constexpr (DC > 4) if (left >= 4) { pv_chunks_few<DT, RQ, 4, MH>(p, DVp, d, v, nb, acc); return 4; }
  if constexpr (DC > 2) if (left >= 2) { pv_chunks_few<DT, RQ, 2, MH>(p, DVp, d, v, nb, acc); return 2; }
  pv_chunks_few<DT, RQ, 1, MH>(p, DVp, d, v, nb, acc);
  return 1;
}

// pv_block for RQ rows: whole NT*VL chunks up to DC at a time, then the VL-wide tail as pv_block does.
// 16-bit rows in place have DV == DVp (a multiple of VL), so only f32 rows reach the tail.
template <int DT, int RQ, bool MH = false>
static void pv_few(const float* p, int DVp, const FewRows* v, int nb, float* acc) {
  constexpr int DC = kFewAcc / (RQ * NT) > 0 ? kFewAcc / (RQ * NT) : 1;
  int d = 0;
  while (d + NT * VL <= DVp) d += NT * VL * pv_chunks_upto<DT, RQ, DC, MH>(p, DVp, d, v, nb, acc, (DVp - d) / (NT * VL));
  for (; d < DVp; d += VL) {
    vf a[RQ];
    for (int r = 0; r < RQ; r++) a[r] = vload(acc + int64_t(r) * DVp + d);
    for (int b = 0; b < nb; b++)
      for (int lane = 0; lane < TK; lane++) {
        if constexpr (MH) {
          for (int r = 0; r < RQ; r++) a[r] += p[r * SK + b * TK + lane] * kv_load<DT>(v[r].rows[b], int64_t(lane) * v[r].stride[b] + d);
          continue;
        }
        const vf vv = kv_load<DT>(v->rows[b], int64_t(lane) * v->stride[b] + d);  // one V row for every query row
        for (int r = 0; r < RQ; r++) a[r] += p[r * SK + b * TK + lane] * vv;
      }
    for (int r = 0; r < RQ; r++) vstore(acc + int64_t(r) * DVp + d, a[r]);
  }
}

// ---- decode paths: convert in registers, no scratch round trip ----------------------------------
// With at most QR query vectors (decode: one row x the heads of one KV head) each K/V element is used
// by exactly one micro-kernel step, so converting it straight into the FMA operands beats converting
// into scratch and loading it back. DT: 1 f16, 2 bf16, 3 affine 8-bit.


// Scores of the QR (padded) query vectors against tile t of a tile-layout segment, K read in place.
// 8-bit K: q.k = sum over groups of scale * (q . codes) + bias * sum(q), so codes go straight into the
// FMAs and the scale/bias are applied once per group (qsum[r * (D/group) + gi] = that group's sum of q).
template <int DT>
static void scores_direct(const float* q, const float* qsum, int D, const KvSegment& sg, int g, int64_t t, float* s, int col0) {
  const int64_t ti = g * (sg.capacity / TK) + t;
  const int esz = DT == 3 ? 1 : 2;
  const uint8_t* kp = sg.k + ti * int64_t(D) * TK * esz;
  const int64_t dist = int64_t(BT) * D * TK * esz;  // one block ahead
  vf acc[QR][NT];
  for (int r = 0; r < QR; r++)
    for (int u = 0; u < NT; u++) acc[r][u] = vsplat(0.f);
  const int G = DT == 3 ? sg.group : D;
  const float* sc = DT == 3 ? sg.k_scales + ti * int64_t(D / G) * TK : nullptr;
  const float* bi = DT == 3 ? sg.k_biases + ti * int64_t(D / G) * TK : nullptr;
  for (int g0 = 0; g0 < D; g0 += G) {
    vf part[QR][NT];
    for (int r = 0; r < QR; r++)
      for (int u = 0; u < NT; u++) part[r][u] = vsplat(0.f);
    for (int d = g0; d < g0 + G; d++) {
      if (((d * TK * esz) & 63) == 0) pf(kp + dist + d * TK * esz);
      vf kv[NT];
      for (int u = 0; u < NT; u++) kv[u] = kv_load<DT>(kp, int64_t(d) * TK + u * VL);
      for (int r = 0; r < QR; r++) {
        const float x = q[r * D + d];
        for (int u = 0; u < NT; u++) part[r][u] += x * kv[u];
      }
    }
    if (DT == 3) {
      const int gi = g0 / G, ng = D / G;
      for (int u = 0; u < NT; u++) {
        const vf vs = vload(sc + gi * TK + u * VL), vb = vload(bi + gi * TK + u * VL);
        for (int r = 0; r < QR; r++) acc[r][u] += part[r][u] * vs + qsum[r * ng + gi] * vb;
      }
    } else {
      for (int r = 0; r < QR; r++)
        for (int u = 0; u < NT; u++) acc[r][u] += part[r][u];
    }
  }
  for (int r = 0; r < QR; r++)
    for (int u = 0; u < NT; u++) vstore(s + r * SK + col0 + u * VL, acc[r][u]);
}

// The float / 8-bit part of pv_direct: NC vector chunks per pass over the block's rows.
template <int DT, int NC>
static void pv_direct_rows(const float* p, int DV, const uint8_t* const* rows, const float* const* sc, const float* const* bi,
                           int ng, int G, int nb, int64_t rowb, int64_t ahead, float* acc) {
  constexpr int esz = DT >= 3 ? 1 : 2;
  constexpr int W = NC * NT * VL;
  for (int d = 0; d < DV; d += W) {
    vf a[NC][QR][NT];
    for (int c = 0; c < NC; c++)
      for (int r = 0; r < QR; r++)
        for (int u = 0; u < NT; u++) a[c][r][u] = vload(acc + int64_t(r) * DV + d + (c * NT + u) * VL);
    const bool fetch = ((d * esz) & 63) == 0;
    for (int b = 0; b < nb; b++) {
      const float* pb = p + b * TK;
      for (int lane = 0; lane < TK; lane++) {
        const uint8_t* row = rows[b] + lane * rowb;
        if (fetch) pf(row + ahead + d * esz);
        float s = 1.f, o = 0.f;
        if (DT == 3) {
          s = sc[b][lane * ng + d / G];
          o = bi[b][lane * ng + d / G];
        }
        for (int c = 0; c < NC; c++) {
          vf vv[NT];
          for (int u = 0; u < NT; u++) {
            vv[u] = kv_load<DT>(row, d + (c * NT + u) * VL);
            if (DT == 3) vv[u] = vv[u] * s + o;
          }
          for (int r = 0; r < QR; r++) {
            const float x = pb[r * SK + lane];
            for (int u = 0; u < NT; u++) a[c][r][u] += x * vv[u];
          }
        }
      }
    }
    for (int c = 0; c < NC; c++)
      for (int r = 0; r < QR; r++)
        for (int u = 0; u < NT; u++) vstore(acc + int64_t(r) * DV + d + (c * NT + u) * VL, a[c][r][u]);
  }
}

// acc[QR][DVp] += P . V over the block's tiles, V rows read in place (all lanes valid, DV % (NT*VL) == 0).
// DT 4 = affine 4-bit V in split-nibble chunks: one 16-byte load yields dims c..c+15 and c+16..c+31.
template <int DT>
static void pv_direct(const float* p, int DV, const KvSegment* const* segs, const int64_t* tl, int nb, int g, float* acc) {
  const int esz = DT >= 3 ? 1 : 2;
  const int64_t rowb = DT == 4 ? DV / 2 : int64_t(DV) * esz;
  const uint8_t* rows[BT];
  const float *sc[BT], *bi[BT];
  int ng = 1, G = DV;
  for (int b = 0; b < nb; b++) {
    const KvSegment& sg = *segs[b];
    const int64_t r0 = g * sg.capacity + tl[b] * TK;
    rows[b] = sg.v + r0 * rowb;
    if (DT >= 3) {
      G = sg.group;
      ng = DV / G;
      sc[b] = sg.v_scales + r0 * ng;
      bi[b] = sg.v_biases + r0 * ng;
      for (int64_t o = 0; o < int64_t(ng) * TK * 4; o += 64) {
        pf(reinterpret_cast<const uint8_t*>(sc[b] + BT * TK * ng) + o);
        pf(reinterpret_cast<const uint8_t*>(bi[b] + BT * TK * ng) + o);
      }
    }
  }
  // Rows one block ahead, a line per line consumed (paced: a burst would fill the line-fill buffers).
  const int64_t ahead = int64_t(BT) * TK * rowb;
  if (DT == 4) {
    for (int c0 = 0; c0 < DV; c0 += 32) {
      vf lo[QR][NT], hi[QR][NT];
      for (int r = 0; r < QR; r++)
        for (int u = 0; u < NT; u++) {
          lo[r][u] = vload(acc + int64_t(r) * DV + c0 + u * VL);
          hi[r][u] = vload(acc + int64_t(r) * DV + c0 + 16 + u * VL);
        }
      const bool fetch = ((c0 / 2) & 63) == 0;
      for (int b = 0; b < nb; b++) {
        const float* pb = p + b * TK;
        for (int lane = 0; lane < TK; lane++) {
          const uint8_t* row = rows[b] + lane * rowb + c0 / 2;
          if (fetch) pf(row + ahead);
          const float s = sc[b][lane * ng + c0 / G], o = bi[b][lane * ng + c0 / G];
          vf vl[NT], vh[NT];
          for (int u = 0; u < NT; u++) {
            decode_q4(row + u * VL, vl[u], vh[u]);
            vl[u] = vl[u] * s + o;
            vh[u] = vh[u] * s + o;
          }
          for (int r = 0; r < QR; r++) {
            const float x = pb[r * SK + lane];
            for (int u = 0; u < NT; u++) {
              lo[r][u] += x * vl[u];
              hi[r][u] += x * vh[u];
            }
          }
        }
      }
      for (int r = 0; r < QR; r++)
        for (int u = 0; u < NT; u++) {
          vstore(acc + int64_t(r) * DV + c0 + u * VL, lo[r][u]);
          vstore(acc + int64_t(r) * DV + c0 + 16 + u * VL, hi[r][u]);
        }
    }
    return;
  }
  // Two vector chunks (2*NT*VL dims) per pass when the width allows: twice the accumulators per scale
  // load and loop step.
  if (DV % (2 * NT * VL) == 0) pv_direct_rows<DT, 2>(p, DV, rows, sc, bi, ng, G, nb, rowb, ahead, acc);
  else pv_direct_rows<DT, 1>(p, DV, rows, sc, bi, ng, G, nb, rowb, ahead, acc);
}

// Which direct path a tile can take (0 = none): tile layout, half/8-bit storage.
static inline int direct_k(const KvSegment& sg) {
  if (sg.layout != kKvTiles) return 0;
  return sg.dtype == kF16 ? 1 : sg.dtype == kBF16 ? 2 : sg.dtype == kQAffine ? 3 : 0;
}
static inline int direct_v(const KvSegment& sg, int DV) {
  if (sg.layout != kKvTiles || DV % (NT * VL)) return 0;
  if (sg.dtype == kQAffine) return sg.v_bits == 8 ? 3 : 4;
  return sg.dtype == kF16 ? 1 : sg.dtype == kBF16 ? 2 : 0;
}

