/**
 * Random-weight checkpoints at a config's real shapes (engine `bench --random`, real-shape tests), for
 * every family. The store is lazy: a tensor is drawn on `get` from its own PRNG stream
 * (xoshiro128** seeded by seed ⊕ hash(name)), so nothing is held until a model loads it and the same
 * name always yields the same bytes. Float tensors are stored F32 / F16 / BF16 (converted in 1M-value
 * chunks, so a 262k-row bf16 table never has an f32 copy). A `module` (Linear / Embedding / stacked
 * experts) becomes MLX affine codes + scales + biases when `quantize` is given and its input dim is a
 * multiple of the group size — mlx-lm's conversion rule (ml-explore/mlx-lm `mlx_lm/utils.py`,
 * `quantize_model`) — drawn directly as random codes, so a multi-GB layer never exists in f32.
 */
import * as native from '@mlxcel/core-native';
import { MlxcelError, Tensor, allocWeightBytes, numel, type QuantConfig, type WeightStore } from '@mlxcel/tensor';
import { seedFor, Xoshiro128 } from './prng.js';

export type FloatDType = 'F32' | 'F16' | 'BF16';

export interface RandomWeightOptions {
  seed?: number;
  /** MLX affine layout for quantizable modules (see `RandomWeights.quantization`). */
  quantize?: { bits: number; groupSize: number };
  /** Float storage dtype; the default is the family's (see each `randomWeights`). */
  dtype?: FloatDType;
}

/** Values uniform in [center − a, center + a). */
export interface Init {
  a: number;
  center?: number;
}
/** ±sqrt(3 / fan_in) (unit-variance activations through a Linear). */
export const initLinear = (fanIn: number): Init => ({ a: Math.sqrt(3 / fanIn) });
/** ±1/sqrt(fan_in). */
export const initFanIn = (fanIn: number): Init => ({ a: 1 / Math.sqrt(fanIn) });
export const initNorm: Init = { a: 0.1, center: 1 };
export const initOnes: Init = { a: 0, center: 1 };
export const initBias: Init = { a: 0.05 };

/** The float dtype a config declares for its stored weights (`torch_dtype` / `dtype`), else F32. */
export function configDType(config: Record<string, unknown>): FloatDType {
  const d = config.torch_dtype ?? config.dtype;
  if (d === 'bfloat16') return 'BF16';
  if (d === 'float16') return 'F16';
  return 'F32';
}

/** A copy of `config` with mlx-lm's quantization block (and its `quantization_config` twin). */
export function withQuantization(config: Record<string, unknown>, q: { bits: number; groupSize: number }): Record<string, unknown> {
  const block = { group_size: q.groupSize, bits: q.bits };
  return { ...config, quantization: block, quantization_config: { ...block } };
}

interface Entry {
  shape: number[];
  /** Uniform in [lo, hi). */
  lo: number;
  hi: number;
  /** Set on the codes tensor of a quantized module. */
  codes?: boolean;
}

const CHUNK = 1 << 20;

// Codes and 16-bit floats are drawn straight into resident weight memory when that is the placement
// (allocWeightBytes), so the loader copies nothing: a multi-GB checkpoint would otherwise exist twice.

export class RandomWeights implements WeightStore {
  /** The quantization block a config needs to load these tensors (undefined when not quantized). */
  readonly quantization: QuantConfig | undefined;
  readonly dtype: FloatDType;
  private readonly entries = new Map<string, Entry>();
  private readonly seed: number;

  constructor(private readonly opts: RandomWeightOptions = {}, defaultDtype: FloatDType = 'BF16') {
    this.seed = opts.seed ?? 0;
    this.dtype = opts.dtype ?? defaultDtype;
    const q = opts.quantize;
    this.quantization = q ? { group_size: q.groupSize, bits: q.bits, mode: 'affine' } : undefined;
  }

  /** A float tensor (norm weights, biases, bare parameters, unquantizable matrices). */
  float(name: string, shape: number[], init: Init): void {
    const c = init.center ?? 0;
    this.entries.set(name, { shape, lo: c - init.a, hi: c + init.a });
  }

  /** A Linear / Embedding / stacked-expert weight at `path` [..., rows, cols], quantized when the options say so and cols allows. */
  module(path: string, shape: number[], init: Init): void {
    const q = this.opts.quantize;
    const cols = shape[shape.length - 1]!;
    if (!q || cols % q.groupSize !== 0) {
      this.float(`${path}.weight`, shape, init);
      return;
    }
    const lead = shape.slice(0, -1);
    this.entries.set(`${path}.weight`, { shape: [...lead, (cols * q.bits) / 32], lo: 0, hi: 0, codes: true });
    // W = s·code + b with codes uniform in [0, 2^bits − 1]: s = 2a/(2^bits − 1) and b = center − a span
    // [center − a, center + a]; scales and biases vary by ±10 % / ±5 % so that groups differ.
    const step = (2 * init.a) / (2 ** q.bits - 1), b = (init.center ?? 0) - init.a;
    const groups = [...lead, cols / q.groupSize];
    this.entries.set(`${path}.scales`, { shape: groups, lo: 0.9 * step, hi: 1.1 * step });
    this.entries.set(`${path}.biases`, { shape: groups, lo: b - 0.05 * Math.abs(init.a), hi: b + 0.05 * Math.abs(init.a) });
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  get(name: string): Tensor {
    const e = this.entries.get(name);
    if (!e) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${name}`);
    const rng = new Xoshiro128(seedFor(this.seed, name));
    const n = numel(e.shape);
    if (e.codes) {
      const bytes = allocWeightBytes(n * 4);
      rng.fillUint32(new Uint32Array(bytes.buffer, bytes.byteOffset, n));
      return new Tensor('U32', e.shape, bytes);
    }
    if (this.dtype === 'F32') {
      const data = new Float32Array(n);
      rng.fillUniform(data, e.lo, e.hi);
      return Tensor.fromF32(data, e.shape);
    }
    const bytes = allocWeightBytes(n * 2);
    const out = new Uint16Array(bytes.buffer, bytes.byteOffset, n);
    const tmp = new Float32Array(Math.min(CHUNK, n));
    for (let off = 0; off < n; off += CHUNK) {
      const src = tmp.subarray(0, Math.min(CHUNK, n - off));
      rng.fillUniform(src, e.lo, e.hi);
      native.fromF32(src, this.dtype === 'F16' ? 1 : 2, out.subarray(off, off + src.length));
    }
    return new Tensor(this.dtype, e.shape, bytes);
  }
}
