/**
 * Row-wise projections the towers share: the Projection contract, Gemma 4's clippable linear (audio
 * conformer and vision encoder alike), a plain Linear as a Projection, the clamp they use and the
 * scalar tensors that hold the clip bounds.
 */
import * as native from '@mlxcel/core-native';
import { Linear, MlxcelError, type QuantConfig, type WeightStore } from '@mlxcel/tensor';

/** A row-wise projection x [rows, in] -> [rows, out]. */
export interface Projection {
  readonly inFeatures: number;
  readonly outFeatures: number;
  forward(x: Float32Array, rows: number): Float32Array;
}

/** out = min(max(x, lo), hi); in place when out is omitted. Skipped when the bounds cannot bite. */
export function clamp(x: Float32Array, lo: number, hi: number, out: Float32Array = x): Float32Array {
  if (lo === -Infinity && hi === Infinity) {
    if (out !== x) out.set(x);
    return out;
  }
  native.clamp(x, lo, hi, out);
  return out;
}

/** A scalar tensor (0-d or [1]) as a number, or `dflt` when absent. */
export function scalarOr(store: WeightStore, name: string, dflt: number): number {
  if (!store.has(name)) return dflt;
  const t = store.get(name);
  if (t.size !== 1) throw new MlxcelError('E_SHAPE', `${name}: shape [${t.shape}] but a scalar was expected`);
  return t.toF32()[0]!;
}

/**
 * Gemma 4's Gemma4ClippableLinear (huggingface/transformers `models/gemma4/modeling_gemma4.py`):
 * y = clip(clip(x, inMin, inMax) · Wᵀ, outMin, outMax), the four bounds stored as scalar tensors next
 * to `<path>.linear.weight`. Missing bounds mean no clamp (HF initialises them to −inf / +inf).
 */
export class ClippableLinear implements Projection {
  constructor(
    readonly linear: Linear,
    readonly inMin = -Infinity,
    readonly inMax = Infinity,
    readonly outMin = -Infinity,
    readonly outMax = Infinity,
  ) {}
  get inFeatures(): number {
    return this.linear.inFeatures;
  }
  get outFeatures(): number {
    return this.linear.outFeatures;
  }
  /** x [rows, in] → [rows, out]. */
  forward(x: Float32Array, rows: number): Float32Array {
    const xin = this.inMin === -Infinity && this.inMax === Infinity ? x : clamp(x, this.inMin, this.inMax, new Float32Array(x.length));
    return clamp(this.linear.forward(xin, rows), this.outMin, this.outMax);
  }

  /** `<path>.linear.weight` [out, in] (quantized iff `.scales` exists) and its optional bounds. */
  static load(store: WeightStore, path: string, opts: { quant?: QuantConfig; shape?: [number, number] }): ClippableLinear {
    const linear = Linear.load(store, `${path}.linear`, { quant: opts.quant, bias: false, shape: opts.shape });
    const s = (k: string, dflt: number): number => scalarOr(store, `${path}.${k}`, dflt);
    return new ClippableLinear(linear, s('input_min', -Infinity), s('input_max', Infinity), s('output_min', -Infinity), s('output_max', Infinity));
  }
}

/** A plain Linear `path` [out, in] as a Projection. */
export function linearProjection(store: WeightStore, path: string, opts: { quant?: QuantConfig; shape?: [number, number]; bias?: boolean }): Projection {
  const l = Linear.load(store, path, { quant: opts.quant, bias: opts.bias ?? false, shape: opts.shape });
  return { inFeatures: l.inFeatures, outFeatures: l.outFeatures, forward: (x, rows) => l.forward(x, rows) };
}
