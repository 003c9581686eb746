/**
 * nn layers built from a checkpoint. A module at path p is quantized iff the checkpoint has
 * `p.scales` (mlx-lm's loader rule); its bits/group come from the per-path override in the config's
 * quantization block, else the global values.
 */
import { MlxcelError } from './errors.js';
import type { WeightStore } from './checkpoint.js';
import * as ops from './ops.js';
import { QuantizedWeight, Weight, type QuantParams } from './weight.js';

/** Where a feed-forward (MLP) projection sits: 'input' = gate / up, 'output' = down (Linear.markFeedForward). */
export type FfnRole = 'input' | 'output';

/** The `quantization` / `quantization_config` block of config.json (global + per-path overrides). */
export type QuantConfig = { group_size?: number; bits?: number; mode?: string } & Record<string, unknown>;

/** Reads the quantization block from a config (top level or inside text_config). */
export function quantConfigOf(config: Record<string, unknown>): QuantConfig | undefined {
  const text = config.text_config as Record<string, unknown> | undefined;
  const q = (config.quantization ?? config.quantization_config ?? text?.quantization ?? text?.quantization_config) as QuantConfig | undefined;
  if (q !== undefined && q !== null && (typeof q !== 'object' || Array.isArray(q)))
    throw new MlxcelError('E_QUANT', `config.json: the quantization block must be an object, got ${JSON.stringify(q)}`);
  if (q && typeof q === 'object' && 'quant_method' in q && q.quant_method !== undefined && q.quant_method !== 'mlx')
    throw new MlxcelError('E_QUANT', `quantization_config.quant_method = ${String(q.quant_method)} is not supported (only MLX affine checkpoints)`);
  return q;
}

/** Quantization parameters for module `path`, or undefined when the config says it is not quantized. */
export function quantParamsFor(q: QuantConfig | undefined, path: string): QuantParams | undefined {
  if (!q) return undefined;
  const o = q[path];
  if (o === false) return undefined;
  const src = (o && typeof o === 'object' ? o : q) as { group_size?: number; bits?: number; mode?: string };
  const mode = src.mode ?? q.mode ?? 'affine';
  if (mode !== 'affine') throw new MlxcelError('E_QUANT', `${path}: quantization mode "${mode}" is not supported (affine only)`);
  const bits = src.bits ?? q.bits, groupSize = src.group_size ?? q.group_size ?? 64;
  if (bits === undefined) throw new MlxcelError('E_QUANT', `${path}: quantization block has no "bits"`);
  // Numbers only: a string "64" would otherwise reach the kernels and fail as "unsupported group size 64".
  for (const [key, v] of [['bits', bits], ['group_size', groupSize]] as const)
    if (typeof v !== 'number' || !Number.isInteger(v))
      throw new MlxcelError('E_QUANT', `${path}: quantization ${key} must be an integer, got ${JSON.stringify(v)}${typeof v === 'string' ? ' (a string)' : ''}`);
  return { bits, groupSize };
}

export interface LoadOptions {
  quant?: QuantConfig;
}

/** Loads the weight at `path` (`path.weight`, plus `.scales`/`.biases` when quantized). */
export function loadWeight(store: WeightStore, path: string, opts: LoadOptions = {}): Weight {
  const wname = `${path}.weight`;
  if (!store.has(wname)) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${wname}`);
  if (store.has(`${path}.scales`)) {
    const q = quantParamsFor(opts.quant, path);
    if (!q)
      throw new MlxcelError('E_QUANT', `${path} has .scales but config.json has no quantization block (or marks it unquantized)`);
    if (!store.has(`${path}.biases`)) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${path}.biases`);
    return QuantizedWeight.fromTensors(store.get(wname), store.get(`${path}.scales`), store.get(`${path}.biases`), q, path);
  }
  return Weight.fromTensor(store.get(wname), wname);
}

/** Loads a 1-D float vector (norm weights, biases) as f32. */
export function loadVector(store: WeightStore, name: string, expectLength?: number): Float32Array {
  if (!store.has(name)) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${name}`);
  const t = store.get(name);
  const v = t.toF32();
  if (expectLength !== undefined && v.length !== expectLength)
    throw new MlxcelError('E_SHAPE', `${name}: shape [${t.shape}] but expected ${expectLength} values`);
  return v;
}

export class Linear {
  constructor(readonly weight: Weight, readonly bias: Float32Array | null = null) {
    if (bias && bias.length !== weight.rows)
      throw new MlxcelError('E_SHAPE', `Linear: bias has ${bias.length} values for ${weight.rows} outputs`);
  }
  get inFeatures(): number {
    return this.weight.cols;
  }
  get outFeatures(): number {
    return this.weight.rows;
  }
  /** x [M, in] -> [M, out] */
  forward(x: Float32Array, M: number, out?: Float32Array): Float32Array {
    return ops.matmul(x, M, this.weight, this.bias, out);
  }

  /**
   * x [M, in] through several Linears of the same `in` (a layer's q / k / v, or gate / up): the same
   * outputs as each one's `forward`, in one pass over all their weights in decode (ops.matmulShared).
   */
  static forwardShared(linears: readonly Linear[], x: Float32Array, M: number, outs?: readonly (Float32Array | undefined)[]): Float32Array[] {
    return ops.matmulShared(x, M, linears, outs);
  }

  /**
   * Marks this as a feed-forward (MLP) projection, `role` saying where it sits: 'input' (gate / up,
   * over the block's normalized input) or 'output' (down, over the gated product). Under
   * `setMatmulPrecision('mixed')` every such weight's quantized matmuls take 8-bit activations (most of
   * a prefill's multiply-adds), under 'balanced' only the 'input' ones; the others take 16-bit ones. No
   * role: an MLP weight of unstated role (8-bit under 'mixed', 16-bit under 'balanced'). No effect on
   * float weights or in the other precisions.
   */
  markFeedForward(role?: FfnRole): this {
    this.weight.native.ffn = role ?? true;
    return this;
  }

  /** Loads `path.weight` (+ `path.bias` when present or required); quantized if `path.scales` exists. */
  static load(store: WeightStore, path: string, opts: LoadOptions & { bias?: boolean | 'optional'; shape?: [number, number] } = {}): Linear {
    const w = loadWeight(store, path, opts);
    if (opts.shape && (w.rows !== opts.shape[0] || w.cols !== opts.shape[1]))
      throw new MlxcelError('E_SHAPE', `${path}.weight: shape [${w.rows}, ${w.cols}] but the config implies [${opts.shape.join(', ')}]`);
    let bias: Float32Array | null = null;
    const want = opts.bias ?? 'optional';
    if (want === true || (want === 'optional' && store.has(`${path}.bias`))) bias = loadVector(store, `${path}.bias`, w.rows);
    return new Linear(w, bias);
  }
}

export class Embedding {
  constructor(readonly weight: Weight) {}
  get numEmbeddings(): number {
    return this.weight.rows;
  }
  get dim(): number {
    return this.weight.cols;
  }
  forward(ids: Int32Array): Float32Array {
    return ops.gather(ids, this.weight);
  }
  /** The tied output head: logits = x . E^T (a quantized matmul against the packed table when quantized). */
  asLinear(): Linear {
    return new Linear(this.weight);
  }
  static load(store: WeightStore, path: string, opts: LoadOptions = {}): Embedding {
    return new Embedding(loadWeight(store, path, opts));
  }
}

export class RMSNorm {
  /** `plusOne` scales by (1 + w) as Gemma checkpoints store it; weight null = no scale. */
  constructor(readonly weight: Float32Array | null, readonly eps: number, readonly plusOne = false) {}
  get dim(): number | undefined {
    return this.weight?.length;
  }
  forward(x: Float32Array, dim = this.weight?.length, out?: Float32Array): Float32Array {
    if (dim === undefined) throw new MlxcelError('E_SHAPE', 'RMSNorm without weight needs an explicit dim');
    return ops.rmsNorm(x, dim, this.weight, this.eps, this.plusOne, out);
  }
  static load(store: WeightStore, path: string, eps: number, opts: { plusOne?: boolean; dim?: number } = {}): RMSNorm {
    return new RMSNorm(loadVector(store, `${path}.weight`, opts.dim), eps, opts.plusOne ?? false);
  }
}

export class LayerNorm {
  constructor(readonly weight: Float32Array | null, readonly bias: Float32Array | null, readonly eps: number) {}
  forward(x: Float32Array, dim = this.weight?.length, out?: Float32Array): Float32Array {
    if (dim === undefined) throw new MlxcelError('E_SHAPE', 'LayerNorm without weight needs an explicit dim');
    return ops.layerNorm(x, dim, this.weight, this.bias, this.eps, out);
  }
  static load(store: WeightStore, path: string, eps: number, opts: { dim?: number; bias?: boolean } = {}): LayerNorm {
    const w = loadVector(store, `${path}.weight`, opts.dim);
    const b = opts.bias === false ? null : loadVector(store, `${path}.bias`, w.length);
    return new LayerNorm(w, b, eps);
  }
}
