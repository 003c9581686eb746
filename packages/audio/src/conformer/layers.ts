/**
 * Small pieces shared by both conformers: the sinusoidal timing signal of the relative positions,
 * softplus and the gradient-clamp bound. (The projections, plain or Gemma 4 "clippable", and the clamp
 * itself are @mlxcel/models-core's, shared with the vision towers.)
 */
import { MlxcelError, type WeightStore } from '@mlxcel/tensor';

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
