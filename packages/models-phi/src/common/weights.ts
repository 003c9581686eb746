/**
 * Loading helpers shared by the Phi weight maps: quantization detection by `.scales` (docs/architecture/formats.md §b,
 * via @mlxcel/tensor's nn loaders), shape checks against the config, and the weight statistics the
 * engine reports.
 */
import { Linear, MlxcelError, type QuantConfig, type Weight, type WeightStore, quantConfigOf } from '@mlxcel/tensor';

export interface LoadCtx {
  store: WeightStore;
  /** `quantization` / `quantization_config` block (global + per-path overrides), if any. */
  quant: QuantConfig | undefined;
}

export function loadCtx(store: WeightStore, config: Record<string, unknown>): LoadCtx {
  return { store, quant: quantConfigOf(config) };
}

/** A Linear whose [out, in] must match the config. `bias`: required (true) or absent (false). */
export function linear(ctx: LoadCtx, path: string, out: number, inp: number, bias: boolean): Linear {
  if (!bias && ctx.store.has(`${path}.bias`))
    throw new MlxcelError('E_UNEXPECTED_TENSOR', `unexpected tensor ${path}.bias (the config declares no bias for this layer)`);
  return Linear.load(ctx.store, path, { quant: ctx.quant, bias, shape: [out, inp] });
}

/** Checks a (possibly stacked) weight's logical shape. */
export function checkShape(w: Weight, name: string, shape: readonly number[]): void {
  if (w.shape.length !== shape.length || w.shape.some((d, i) => d !== shape[i]))
    throw new MlxcelError('E_SHAPE', `${name}: shape [${w.shape.join(', ')}] but the config implies [${shape.join(', ')}]`);
}

/** Parameter count of a weight (logical elements, quantized or not). */
export function paramCount(w: Weight): number {
  return w.shape.reduce((a, b) => a * b, 1);
}

export class WeightStats {
  parameters = 0;
  weightBytes = 0;
  /** A weight read in full every token. */
  dense(w: Weight, extraParams = 0): void {
    this.parameters += paramCount(w) + extraParams;
    this.weightBytes += w.nbytes;
  }
  /** A weight of which only `fraction` is read per token (embedding rows, active experts). */
  partial(w: Weight, fraction: number): void {
    this.parameters += paramCount(w);
    this.weightBytes += w.nbytes * fraction;
  }
  vector(n: number): void {
    this.parameters += n;
    this.weightBytes += 4 * n;
  }
  get value(): { parameters: number; weightBytes: number } {
    return { parameters: this.parameters, weightBytes: Math.round(this.weightBytes) };
  }
}
