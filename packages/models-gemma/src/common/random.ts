/**
 * A lazily generated random checkpoint (bench --random, real-shape tests). Tensors are produced on
 * `get` from a per-tensor seed (seed ⊕ hash(name)), so nothing is held until a model loads it and the
 * same name always yields the same bytes. Float tensors are stored F32/F16/BF16; modules marked
 * quantizable become MLX affine (`.weight` U32 codes + `.scales` / `.biases`) when `quantize` is given
 * and their input dim is a multiple of the group size (mlx-lm's conversion rule, formats.md §b).
 * Codes, scales and biases are drawn directly (no f32 matrix is ever built), which keeps 262k-row
 * vocabularies cheap.
 */
import * as native from '@mlxcel/core-native';
import { MlxcelError, Tensor, type QuantConfig, type WeightStore } from '@mlxcel/tensor';

export interface RandomWeightOptions {
  seed?: number;
  quantize?: { bits: number; groupSize: number };
  /** Storage dtype of float tensors (default BF16, as released checkpoints). */
  dtype?: 'F32' | 'F16' | 'BF16';
}

/** How a tensor's values are drawn: uniform in [center − a, center + a]. */
export interface Init {
  a: number;
  center?: number;
}
export const initLinear = (fanIn: number): Init => ({ a: Math.sqrt(3 / fanIn) });
export const initNorm: Init = { a: 0.1, center: 1 };
export const initOnes: Init = { a: 0, center: 1 };

interface Entry {
  shape: number[];
  init: Init;
  /** Set for the three tensors of a quantized module. */
  part?: 'codes' | 'scales' | 'biases';
  bits?: number;
  groupSize?: number;
}

function hash32(s: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h || 1;
}

/** xorshift32: fast, deterministic, plenty for weights. */
function fillWords(out: Uint32Array, state: number): number {
  let x = state;
  for (let i = 0; i < out.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x >>> 0;
  }
  return x;
}

export class RandomWeights implements WeightStore {
  /** The quantization block a config needs to load these tensors (undefined when not quantized). */
  readonly quantization: QuantConfig | undefined;
  private readonly entries = new Map<string, Entry>();
  private readonly seed: number;
  private readonly dtype: 'F32' | 'F16' | 'BF16';

  constructor(private readonly opts: RandomWeightOptions = {}) {
    this.seed = opts.seed ?? 0;
    this.dtype = opts.dtype ?? 'BF16';
    const q = opts.quantize;
    this.quantization = q ? { group_size: q.groupSize, bits: q.bits, mode: 'affine' } : undefined;
  }

  /** A float tensor (norm weights, bare parameters, unquantizable matrices). */
  float(name: string, shape: number[], init: Init): void {
    this.entries.set(name, { shape, init });
  }

  /** A Linear / Embedding weight at `path` (`path.weight`), quantized when the options say so and its last dim allows. */
  module(path: string, shape: number[], init: Init): void {
    const q = this.opts.quantize;
    const cols = shape[shape.length - 1]!;
    if (!q || cols % q.groupSize !== 0) {
      this.float(`${path}.weight`, shape, init);
      return;
    }
    const lead = shape.slice(0, -1);
    const common = { init, bits: q.bits, groupSize: q.groupSize };
    this.entries.set(`${path}.weight`, { ...common, shape: [...lead, (cols * q.bits) / 32], part: 'codes' });
    this.entries.set(`${path}.scales`, { ...common, shape: [...lead, cols / q.groupSize], part: 'scales' });
    this.entries.set(`${path}.biases`, { ...common, shape: [...lead, cols / q.groupSize], part: 'biases' });
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
    const count = e.shape.reduce((a, b) => a * b, 1);
    const state = hash32(name, this.seed);
    if (e.part === 'codes') {
      const words = new Uint32Array(count);
      fillWords(words, state);
      return new Tensor('U32', e.shape, new Uint8Array(words.buffer));
    }
    if (e.part === 'scales' || e.part === 'biases') {
      // W = s·q + b with q uniform in [0, 2^bits − 1]: s = 2a/(2^bits − 1), b = center − a spans [center − a, center + a].
      const n = 2 ** e.bits! - 1;
      const v = e.part === 'scales' ? (2 * e.init.a) / n : (e.init.center ?? 0) - e.init.a;
      return this.floats(e.shape, count, () => v);
    }
    const { a, center = 0 } = e.init;
    if (a === 0) return this.floats(e.shape, count, () => center);
    const words = new Uint32Array(Math.min(count, 1 << 20));
    let x = state, i = 0;
    return this.floats(e.shape, count, () => {
      if (i === 0) x = fillWords(words, x);
      const w = words[i]!;
      i = (i + 1) % words.length;
      return center + a * (w / 2147483648 - 1);
    });
  }

  /** Fills `count` values from `next` in the store's float dtype (converted in 1M-value chunks). */
  private floats(shape: number[], count: number, next: () => number): Tensor {
    const chunk = new Float32Array(Math.min(count, 1 << 20));
    if (this.dtype === 'F32') {
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = next();
      return Tensor.fromF32(out, shape);
    }
    const out = new Uint16Array(count);
    for (let off = 0; off < count; off += chunk.length) {
      const n = Math.min(chunk.length, count - off);
      const c = n === chunk.length ? chunk : chunk.subarray(0, n);
      for (let i = 0; i < n; i++) c[i] = next();
      native.fromF32(c, this.dtype === 'F16' ? 1 : 2, out.subarray(off, off + n));
    }
    return new Tensor(this.dtype, shape, new Uint8Array(out.buffer));
  }
}
