/**
 * Phi self-attention over a batch: RoPE with each sequence's table at its own positions, then
 * models-core's attendBatch (K/V appended to the sequence's cache of this layer, GQA, causal,
 * optional window and per-head mask). q/k/v are row-major [N, heads·D] over the concatenated rows.
 */
import { attendBatch, type AttentionGeometry, type LayerCacheSpec, type MaskBuilder } from '@mlxcel/models-core';
import type { PhiLayout, PhiRun } from './batch.js';

/** The config keys Phi-3 and PhiMoE share for their (identical on every layer) attention. */
export interface UniformAttentionConfig {
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  sliding_window: number | null;
}

/**
 * The attention geometry of a model whose layers all attend alike, with scores scaled by D^(−1/2) and
 * HF window semantics i − W < j ≤ i, and its per-layer cache specs.
 */
export function uniformAttention(cfg: UniformAttentionConfig): { geom: AttentionGeometry; layerCaches: LayerCacheSpec[] } {
  const geom: AttentionGeometry = {
    nHeads: cfg.num_attention_heads, nKvHeads: cfg.num_key_value_heads, headDim: cfg.head_dim,
    scale: 1 / Math.sqrt(cfg.head_dim), window: cfg.sliding_window,
  };
  const spec = { nKvHeads: geom.nKvHeads, headDim: geom.headDim, window: geom.window };
  return { geom, layerCaches: Array.from({ length: cfg.num_hidden_layers }, () => ({ ...spec })) };
}

/**
 * Layer `layer`'s attention: q [N, nH·D], k / v [N, nKV·D] (RoPE applied here, in place, per sequence
 * at its positions) → [N, nH·D].
 */
export function phiAttention(
  layer: number, q: Float32Array, k: Float32Array, v: Float32Array, b: PhiLayout, g: AttentionGeometry, mask?: MaskBuilder<PhiRun>,
): Float32Array {
  const { nHeads, nKvHeads, headDim: D } = g;
  const qw = nHeads * D, kw = nKvHeads * D;
  const table = b.seqs[0]!.table;
  if (b.seqs.every((s) => s.table === table)) {
    // One table for the whole batch (the usual case: one LongRoPE regime): two calls at every row's position.
    table.apply(q, b.n, nHeads, D, b.positions);
    table.apply(k, b.n, nKvHeads, D, b.positions);
  } else {
    for (const s of b.seqs) {
      s.table.apply(q.subarray(s.start * qw, (s.start + s.len) * qw), s.len, nHeads, D, s.p0);
      s.table.apply(k.subarray(s.start * kw, (s.start + s.len) * kw), s.len, nKvHeads, D, s.p0);
    }
  }
  return attendBatch(q, k, v, b, (s) => s.state.caches[layer]!, g, mask);
}
