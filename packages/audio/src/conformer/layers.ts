/**
 * Small pieces shared by both conformers: projections (plain or Gemma 4 "clippable"), the gradient
 * clamp, the sinusoidal timing signal of the relative positions, softplus.
 */
import * as native from '@mlxcel/core-native';
import { Linear, MlxcelError, type WeightStore, type QuantConfig } from '@mlxcel/tensor';

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

/**
 * Gemma 4's Gemma4ClippableLinear: y = clip(clip(x, inMin, inMax) . W^T, outMin, outMax), the four
 * bounds stored as scalar tensors next to `<path>.linear.weight`. Missing bounds mean no clamp
 * (HF initialises them to -inf / +inf).
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
  forward(x: Float32Array, rows: number): Float32Array {
    const xin = this.inMin === -Infinity && this.inMax === Infinity ? x : clamp(x, this.inMin, this.inMax, new Float32Array(x.length));
    return clamp(this.linear.forward(xin, rows), this.outMin, this.outMax);
  }

  static load(store: WeightStore, path: string, opts: { quant?: QuantConfig; shape?: [number, number] }): ClippableLinear {
    const linear = Linear.load(store, `${path}.linear`, { quant: opts.quant, bias: false, shape: opts.shape });
    const s = (k: string, dflt: number): number => scalarOr(store, `${path}.${k}`, dflt);
    return new ClippableLinear(linear, s('input_min', -Infinity), s('input_max', Infinity), s('output_min', -Infinity), s('output_max', Infinity));
  }
}

/** A plain Linear as a Projection. */
export function linearProjection(store: WeightStore, path: string, opts: { quant?: QuantConfig; shape?: [number, number]; bias?: boolean }): Projection {
  const l = Linear.load(store, path, { quant: opts.quant, bias: opts.bias ?? false, shape: opts.shape });
  return { inFeatures: l.inFeatures, outFeatures: l.outFeatures, forward: (x, rows) => l.forward(x, rows) };
}

/** A scalar tensor (0-d or [1]) as a number, or `dflt` when absent. */
export function scalarOr(store: WeightStore, name: string, dflt: number): number {
  if (!store.has(name)) return dflt;
  const t = store.get(name);
  if (t.size !== 1) throw new MlxcelError('E_SHAPE', `${name}: shape [${t.shape}] but a scalar was expected`);
  return t.toF32()[0]!;
}

/** softplus in float64, rounded to float32. */
export function softplus(x: number): number {
  return Math.fround(x > 20 ? x : Math.log1p(Math.exp(x)));
}

/**
 * Timing signal [positions.length, D]: row = [sin(p w_0) .. sin(p w_{D/2-1}), cos(p w_0) ..] with
 * w_i = exp(-i ln(1e4) / (D/2 - 1)), each step rounded to float32 like the float32 torch reference.
 */
export function timingSignal(positions: readonly number[], D: number): Float32Array {
  const half = D / 2;
  const f = Math.fround;
  const inc = f(-Math.log(10000) / Math.max(half - 1, 1));
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = f(Math.exp(f(i * inc)));
  const out = new Float32Array(positions.length * D);
  positions.forEach((p, r) => {
    for (let i = 0; i < half; i++) {
      const a = f(p * inv[i]!);
      out[r * D + i] = Math.sin(a);
      out[r * D + half + i] = Math.cos(a);
    }
  });
  return out;
}

/**
 * The conformers' clamp bound: HF uses min(gradient_clipping, finfo(weight dtype).max), which only
 * bites for float16 checkpoints (65504); f32/bf16 (and quantized ones, whose activations are bf16)
 * keep gradient_clipping.
 */
export function clipBound(store: WeightStore, module: string, gradientClipping: number): number {
  const name = store.has(`${module}.scales`) ? `${module}.scales` : `${module}.weight`;
  if (!store.has(name)) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${module}.weight`);
  return Math.min(gradientClipping, store.get(name).dtype === 'F16' ? 65504 : 3.4028234663852886e38);
}
