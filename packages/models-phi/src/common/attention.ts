/**
 * Self-attention over a batch of runs: RoPE with each run's table at its own positions, K/V appended to
 * the run's cache of this layer, then the cache's attention kernel (GQA, causal, optional window and
 * per-head mask). q/k/v are row-major [rows, heads·D] over the concatenated runs.
 */
import type { Run } from './batch.js';

/** The config keys Phi-3 and PhiMoE share for their (identical on every layer) attention. */
export interface UniformAttentionConfig {
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  sliding_window: number | null;
}

/**
 * Per-layer cache specs and the attention geometry of a model whose layers all attend alike, with
 * scores scaled by D^(−1/2) (phi3.md §3.1) and HF window semantics i − W < j ≤ i (§3.2).
 */
export function uniformAttention(cfg: UniformAttentionConfig): {
  layerCaches: { nKvHeads: number; headDim: number; window: number | null }[];
  geom: AttentionGeometry;
} {
  const cache = { nKvHeads: cfg.num_key_value_heads, headDim: cfg.head_dim, window: cfg.sliding_window };
  return {
    layerCaches: Array.from({ length: cfg.num_hidden_layers }, () => ({ ...cache })),
    geom: {
      nHeads: cfg.num_attention_heads, nKvHeads: cfg.num_key_value_heads, headDim: cfg.head_dim,
      scale: 1 / Math.sqrt(cfg.head_dim), window: cfg.sliding_window,
    },
  };
}

export interface AttentionGeometry {
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /** Score scale (1/sqrt(D) for Phi-3 / PhiMoE; mup_attn_multiplier / D for Phi-3-small). */
  scale: number;
  /** Sliding window W (key visible iff q − p < W); null = none. */
  window: number | null;
}

/**
 * An extra visibility mask for one run at one layer: [nHeads, T, slots] bytes (nonzero = visible),
 * slots in `kPos` order, or null when every causal key is visible.
 */
export type MaskBuilder = (run: Run, qPos: Int32Array, kPos: Int32Array) => Uint8Array | null;

export function attendRuns(
  layer: number, q: Float32Array, k: Float32Array, v: Float32Array, runs: readonly Run[], g: AttentionGeometry, mask?: MaskBuilder,
): Float32Array {
  const { nHeads, nKvHeads, headDim: D } = g;
  const qw = nHeads * D, kw = nKvHeads * D;
  const out = new Float32Array((q.length / qw) * qw);
  for (const run of runs) {
    const { row0, T, pos0 } = run;
    const qs = q.subarray(row0 * qw, (row0 + T) * qw);
    const ks = k.subarray(row0 * kw, (row0 + T) * kw);
    const vs = v.subarray(row0 * kw, (row0 + T) * kw);
    run.table.apply(qs, T, nHeads, D, pos0);
    run.table.apply(ks, T, nKvHeads, D, pos0);
    const cache = run.seq.caches[layer]!;
    cache.update(ks, vs, T);
    const qPos = new Int32Array(T);
    for (let t = 0; t < T; t++) qPos[t] = pos0 + t;
    const m = mask ? mask(run, qPos, cache.slotPositions()) : null;
    const o = cache.attend(qs, T, nHeads, qPos, {
      scale: g.scale,
      window: g.window ?? 0,
      causal: true,
      ...(m ? { mask: m, maskHeads: nHeads } : {}),
    });
    out.set(o, row0 * qw);
  }
  return out;
}
