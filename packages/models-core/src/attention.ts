/**
 * Attention geometry and the batched attention call shared by every family. Convention for "no
 * window": `window: null` everywhere (geometry, cache specs); a number W means a key at position p is
 * visible from a query at q iff q − p < W (HF's sliding window, the key at q included).
 */
import { attendBatch as attendCaches, type AttendItem, type LayerCache } from '@mlxcel/cache';
import type { BatchLayout } from './batch.js';

export interface AttentionGeometry {
  nHeads: number;
  /** GQA: nHeads is a multiple of nKvHeads. */
  nKvHeads: number;
  headDim: number;
  /** Score scale: 1/sqrt(D) (Phi-3, PhiMoE), mup_attn_multiplier / D (Phi-3-small), 1 (Gemma). */
  scale: number;
  /** Sliding window W in keys (the query's own key included); null = full attention. */
  window: number | null;
}

/** What one sequence of a batch needs for attention: its row slice, positions and this layer's cache. */
export interface AttendRows {
  start: number;
  len: number;
}

/**
 * An extra visibility mask for one sequence at one layer: [nHeads, T, slots] bytes (nonzero = visible),
 * slots in `kPos` order, or null when every causal key is visible (Phi-3-small block-sparse layers).
 */
export type MaskBuilder<R> = (seq: R, qPos: Int32Array, kPos: Int32Array) => Uint8Array | null;

/**
 * Attention of every sequence of the batch over its own cache: the new K/V rows (when given; a
 * KV-shared layer passes null and reads its owner's cache) are appended, then ONE native call
 * (@mlxcel/cache attendBatch) runs causal GQA attention for every sequence's query rows over its own
 * cache, so a decode step of B sequences costs one kernel launch per layer, not B. q [N, nHeads·D],
 * k / v [N, nKvHeads·D], RoPE already applied → [N, nHeads·D].
 */
export function attendBatch<R extends AttendRows>(
  q: Float32Array, k: Float32Array | null, v: Float32Array | null, layout: BatchLayout<R>,
  cacheOf: (seq: R) => LayerCache, g: AttentionGeometry, mask?: MaskBuilder<R>,
  /** Bidirectional spans of a sequence in this call ([start, end) absolute positions), e.g. Gemma 4 image spans. */
  spansOf?: (seq: R) => Int32Array | undefined,
): Float32Array {
  const { nHeads, nKvHeads, headDim: D } = g;
  const kw = nKvHeads * D;
  // Every sequence's keys first (a sequence's slots must include its own new rows), then one call.
  const items: AttendItem[] = layout.seqs.map((s) => {
    const r0 = s.start, r1 = s.start + s.len;
    const cache = cacheOf(s);
    if (k && v) cache.update(k.subarray(r0 * kw, r1 * kw), v.subarray(r0 * kw, r1 * kw), s.len);
    const qPos = layout.positions.subarray(r0, r1);
    const m = mask ? mask(s, qPos, cache.slotPositions()) : null;
    const spans = spansOf?.(s);
    return { cache, rows: s.len, qPos, ...(m ? { mask: m, maskHeads: nHeads } : {}), ...(spans?.length ? { spans } : {}) };
  });
  // Rows of layout.seqs are consecutive in sequence order (layoutRows), as the batched call expects.
  return attendCaches(q, items, nHeads, { scale: g.scale, window: g.window ?? 0, causal: true });
}
