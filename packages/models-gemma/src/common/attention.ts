/**
 * Gemma 3n / Gemma 4 self-attention (gemma3n.md §8, gemma4.md §6):
 *   q = RoPE(q_norm(q_proj x)), k = RoPE(k_norm(k_proj x)), v = RMS0(v_proj x)  (per head, over head_dim)
 *   scores = q·kᵀ with scale 1.0, no softcap, softmax in f32, GQA; sliding layers see `window` keys.
 * With `attention_k_eq_v` (Gemma 4 full layers) there is no v_proj and v = RMS0(k_proj x), the raw key
 * projection before k_norm and RoPE (gemma4.md §6.3). KV-shared layers project only q and read the
 * source layer's cache (SharedCache) after the source's update in this same forward.
 */
import type { LayerCache } from '@mlxcel/cache';
import type { RopeTable } from '@mlxcel/rope';
import { ops, type Linear, type RMSNorm } from '@mlxcel/tensor';
import type { BatchLayout } from './batch.js';

/**
 * Where a KV-shared layer's query positions come from. 'forward-start' (correct, HF): p0 + i with p0
 * read once before the layer loop. 'owner-cache' reproduces the mlx-lm / mlx-vlm Gemma 3n bug
 * (gemma3n.md §10: the owner's offset, already advanced by this forward); it exists only so the
 * invariance tests can show that they catch it. Never use it otherwise.
 */
export type SharedQueryOffset = 'forward-start' | 'owner-cache';

/** Options of loadGemma3n / loadGemma4 beyond the ArchitectureDef contract. */
export interface GemmaLoadOptions {
  /** See SharedQueryOffset: 'owner-cache' reproduces an upstream bug, for tests only. */
  sharedQueryOffset?: SharedQueryOffset;
}

export interface AttentionGeometry {
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /** Sliding window in keys (including self); 0 = full attention. */
  window: number;
  eps: number;
}

export interface AttentionWeights {
  q: Linear;
  o: Linear;
  qNorm: RMSNorm;
  /** Absent on KV-shared layers. */
  k: Linear | null;
  kNorm: RMSNorm | null;
  /** Null with attention_k_eq_v (V from the K projection) and on KV-shared layers. */
  v: Linear | null;
}

export class GemmaAttention {
  constructor(
    readonly geo: AttentionGeometry,
    readonly w: AttentionWeights,
    readonly rope: RopeTable,
    /** True when this layer reads another layer's KV. */
    readonly shared: boolean,
    readonly sharedQueryOffset: SharedQueryOffset = 'forward-start',
    /** Queries and keys inside one of the input's bidirectionalSpans see each other (Gemma 4 "vision" sliding layers). */
    readonly bidirectionalSpans = false,
  ) {}

  /** xn [N, H] (already input-normed) → [N, H]; `caches[b]` is this layer's cache of sequence b. */
  forward(xn: Float32Array, batch: BatchLayout, caches: readonly LayerCache[]): Float32Array {
    const { nHeads, nKvHeads, headDim, window, eps } = this.geo;
    const N = batch.n;
    const q = this.w.q.forward(xn, N);
    ops.rmsNorm(q, headDim, this.w.qNorm.weight, eps, false, q);
    if (this.shared && this.sharedQueryOffset === 'owner-cache') this.ropeFromOwner(q, batch, caches);
    else this.rope.apply(q, N, nHeads, headDim, batch.positions);

    let k: Float32Array | null = null, v: Float32Array | null = null;
    if (!this.shared) {
      const kRaw = this.w.k!.forward(xn, N);
      // V first: with k_eq_v it is the scale-free norm of the raw K projection (before k_norm / RoPE).
      v = ops.rmsNorm(this.w.v ? this.w.v.forward(xn, N) : kRaw, headDim, null, eps);
      k = ops.rmsNorm(kRaw, headDim, this.w.kNorm!.weight, eps, false, kRaw);
      this.rope.apply(k, N, nKvHeads, headDim, batch.positions);
    }

    const qw = nHeads * headDim, kw = nKvHeads * headDim;
    const attn = new Float32Array(N * qw);
    batch.seqs.forEach((s, b) => {
      const cache = caches[b]!;
      const r0 = s.start, r1 = s.start + s.len;
      if (k && v) cache.update(k.subarray(r0 * kw, r1 * kw), v.subarray(r0 * kw, r1 * kw), s.len);
      const out = cache.attend(q.subarray(r0 * qw, r1 * qw), s.len, nHeads, batch.positions.subarray(r0, r1), {
        scale: 1.0,
        window: window || undefined,
        causal: true,
        ...(this.bidirectionalSpans && s.input.bidirectionalSpans?.length ? { spans: s.input.bidirectionalSpans } : {}),
      });
      attn.set(out, r0 * qw);
    });
    return this.w.o.forward(attn, N);
  }

  /** The upstream bug (see SharedQueryOffset): positions from the owner cache's post-update offset. */
  private ropeFromOwner(q: Float32Array, batch: BatchLayout, caches: readonly LayerCache[]): void {
    const pos = new Int32Array(batch.n);
    batch.seqs.forEach((s, b) => {
      const off = caches[b]!.offset;
      for (let t = 0; t < s.len; t++) pos[s.start + t] = off + t;
    });
    this.rope.apply(q, batch.n, this.geo.nHeads, this.geo.headDim, pos);
  }
}
