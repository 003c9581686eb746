/**
 * The conformer's macaron feed-forward and light convolution modules (docs/architecture/audio.md §3.3, §3.5, §4.3);
 * both models share the formulas and differ only in their projections (plain or clippable) and in
 * the clamp bound. All norms are full-scale RMSNorms.
 */
import * as native from '@mlxcel/core-native';
import { MlxcelError, ops, RMSNorm, type WeightStore } from '@mlxcel/tensor';
import { clamp, type Projection } from '@mlxcel/models-core';

/** FFW(x) = x + w * post( clamp( W2 silu( W1 pre(clamp(x)) ) ) ). */
export class ConformerFeedForward {
  constructor(
    readonly pre: RMSNorm,
    readonly ffw1: Projection,
    readonly ffw2: Projection,
    readonly post: RMSNorm,
    readonly residualWeight: number,
    readonly clip: number,
  ) {}

  forward(x: Float32Array, T: number): Float32Array {
    const D = this.ffw1.inFeatures;
    let h = clamp(x, -this.clip, this.clip, new Float32Array(x.length));
    h = this.pre.forward(h, D, h);
    h = this.ffw1.forward(h, T);
    ops.silu(h, h);
    h = this.ffw2.forward(h, T);
    clamp(h, -this.clip, this.clip);
    h = this.post.forward(h, D, h);
    return ops.add(x, ops.scale(h, this.residualWeight, 0, h), h);
  }
}

/**
 * LConv(x) = x + W_end silu( convNorm( clamp( DWConv( GLU( W_start pre(x) ) ) ) ) ), with a causal
 * depthwise conv of kernel K (output t sees inputs t-K+1 .. t).
 */
export class LightConv {
  constructor(
    readonly pre: RMSNorm,
    readonly start: Projection,
    /** Depthwise weights [D, K]. */
    readonly dw: Float32Array,
    readonly kernel: number,
    readonly convNorm: RMSNorm,
    readonly end: Projection,
    readonly clip: number,
  ) {}

  forward(x: Float32Array, T: number): Float32Array {
    const D = this.end.outFeatures;
    const a = this.start.forward(this.pre.forward(x, D), T);
    const g = new Float32Array(T * D);
    native.glu(a, T, D, g);
    const c = new Float32Array(T * D);
    native.dwconv1dCausal(g, T, D, this.dw, this.kernel, c);
    clamp(c, -this.clip, this.clip);
    this.convNorm.forward(c, D, c);
    ops.silu(c, c);
    const y = this.end.forward(c, T);
    return ops.add(x, y, y);
  }
}

/**
 * Depthwise conv1d weights as [C, K]. HF stores [C, 1, K] and mlx-vlm [C, K, 1]: the same bytes in
 * row-major order, so both flatten to c * K + k.
 */
export function loadDepthwise(store: WeightStore, name: string, C: number): { w: Float32Array; K: number } {
  if (!store.has(name)) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${name}`);
  const t = store.get(name);
  const s = t.shape;
  const ok = s.length === 3 && s[0] === C && (s[1] === 1 || s[2] === 1);
  if (!ok) throw new MlxcelError('E_SHAPE', `${name}: shape [${s}] but a depthwise conv [${C}, 1, K] (or [${C}, K, 1]) was expected`);
  const K = s[1] === 1 ? s[2]! : s[1]!;
  return { w: Float32Array.from(t.toF32()), K };
}

/** x * valid[t] for every row t (zeroes padded frames). */
export function maskRows(x: Float32Array, D: number, valid: Uint8Array): Float32Array {
  for (let t = 0; t < valid.length; t++) if (!valid[t]) x.fill(0, t * D, (t + 1) * D);
  return x;
}
