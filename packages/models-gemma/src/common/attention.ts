/**
 * Gemma 3n / Gemma 4 self-attention (huggingface/transformers `models/gemma3n/modeling_gemma3n.py`
 * `Gemma3nTextAttention.forward`, `models/gemma4/modeling_gemma4.py` `Gemma4TextAttention.forward`;
 * docs/architecture/gemma3n.md §8):
 *   q = RoPE(q_norm(q_proj x)), k = RoPE(k_norm(k_proj x)), v = RMS0(v_proj x)  (per head, over head_dim)
 *   scores = q·kᵀ with scale 1.0, no softcap, softmax in f32, GQA; sliding layers see `window` keys.
 * With `attention_k_eq_v` (Gemma 4 full layers) there is no v_proj and v = RMS0(k_proj x), the raw key
 * projection before k_norm and RoPE. KV-shared layers project only q and read the source layer's cache
 * (SharedCache) after the source's update in this same forward.
 */
import { attendBatch, type AttentionGeometry } from '@mlxcel/models-core';
import type { RopeTable } from '@mlxcel/rope';
import { Linear, ops, type RMSNorm } from '@mlxcel/tensor';
import type { GemmaLayout } from './batch.js';

/**
 * Where a KV-shared layer's query positions come from. 'forward-start' (correct, HF): p0 + i with p0
 * read once before the layer loop. 'owner-cache' reproduces the mlx-lm / mlx-vlm Gemma 3n bug (the
 * owner's offset, already advanced by this forward; docs/architecture/gemma3n.md §10); it
 * exists only so the invariance tests can show that they catch it. Never use it otherwise.
 */
export type SharedQueryOffset = 'forward-start' | 'owner-cache';

/** Options of loadGemma3n / loadGemma4 beyond the ArchitectureDef contract. */
export interface GemmaLoadOptions {
  /** See SharedQueryOffset: 'owner-cache' reproduces an upstream bug, for tests only. */
  sharedQueryOffset?: SharedQueryOffset;
}

/** Gemma geometry: scale 1 and the RMSNorm eps of q_norm / k_norm / the scale-free v norm. */
export type GemmaAttentionGeometry = AttentionGeometry & { eps: number };

export interface AttentionWeights {
  /** [nHeads·D, H] */
  q: Linear;
  /** [H, nHeads·D] */
  o: Linear;
  /** [D] */
  qNorm: RMSNorm;
  /** [nKvHeads·D, H]; absent on KV-shared layers. */
  k: Linear | null;
  /** [D] */
  kNorm: RMSNorm | null;
  /** [nKvHeads·D, H]; null with attention_k_eq_v (V from the K projection) and on KV-shared layers. */
  v: Linear | null;
}

export class GemmaAttention {
  constructor(
    readonly geo: GemmaAttentionGeometry,
    readonly w: AttentionWeights,
    readonly rope: RopeTable,
    /** This layer's index: its cache in every sequence state (a SharedCache on KV-shared layers). */
    readonly layer: number,
    /** True when this layer reads another layer's KV. */
    readonly shared: boolean,
    readonly sharedQueryOffset: SharedQueryOffset = 'forward-start',
    /** Queries and keys inside one of the input's bidirectionalSpans see each other (Gemma 4 "vision" sliding layers). */
    readonly bidirectionalSpans = false,
  ) {}

  /** xn [N, H] (already input-normed) → [N, H]. */
  forward(xn: Float32Array, b: GemmaLayout): Float32Array {
    const { nHeads, nKvHeads, headDim, eps } = this.geo;
    const N = b.n;
    // q, k and v (those this layer has) over the same xn: one pass over their weights in decode.
    const proj = this.shared ? [this.w.q] : this.w.v ? [this.w.q, this.w.k!, this.w.v] : [this.w.q, this.w.k!];
    const [q, kRaw, vRaw] = Linear.forwardShared(proj, xn, N) as [Float32Array, Float32Array?, Float32Array?]; // [N, nHeads·D], [N, nKvHeads·D] x 2
    ops.rmsNorm(q, headDim, this.w.qNorm.weight, eps, false, q);
    if (this.shared && this.sharedQueryOffset === 'owner-cache') this.ropeFromOwner(q, b);
    else this.rope.apply(q, N, nHeads, headDim, b.positions);

    let k: Float32Array | null = null, v: Float32Array | null = null; // [N, nKvHeads·D]
    if (kRaw) {
      // V first: with k_eq_v it is the scale-free norm of the raw K projection (before k_norm / RoPE).
      v = ops.rmsNorm(vRaw ?? kRaw, headDim, null, eps);
      k = ops.rmsNorm(kRaw, headDim, this.w.kNorm!.weight, eps, false, kRaw);
      this.rope.apply(k, N, nKvHeads, headDim, b.positions);
    }
    // [N, nHeads·D]; "vision" sliding layers let each image span attend to itself both ways.
    const spansOf = this.bidirectionalSpans ? (s: { input: { bidirectionalSpans?: Int32Array } }) => s.input.bidirectionalSpans : undefined;
    const attn = attendBatch(q, k, v, b, (s) => s.state.caches[this.layer]!, this.geo, undefined, spansOf);
    return this.w.o.forward(attn, N);
  }

  /** The upstream bug (see SharedQueryOffset): positions from the owner cache's post-update offset. */
  private ropeFromOwner(q: Float32Array, b: GemmaLayout): void {
    const pos = new Int32Array(b.n);
    for (const s of b.seqs) {
      const off = s.state.caches[this.layer]!.offset;
      for (let t = 0; t < s.len; t++) pos[s.start + t] = off + t;
    }
    this.rope.apply(q, b.n, this.geo.nHeads, this.geo.headDim, pos);
  }
}
