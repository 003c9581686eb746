/**
 * Random-weight checkpoints at a config's real shapes (engine `bench --random`, shape tests).
 * Float tensors are uniform in [-amp, amp] in the checkpoint's stored dtype; with `quantize`, every
 * module mlx-lm would quantize (a Linear/Embedding/stacked expert weight whose input dim is a multiple
 * of the group size, formats.md §b) is written directly as MLX affine codes + scales + biases — random
 * codes instead of quantizing random floats, so a multi-GB layer never exists in f32.
 */
import * as native from '@mlxcel/core-native';
import { MemoryWeights, Tensor, numel, type QuantParams } from '@mlxcel/tensor';
import { Prng, seedFor } from './prng.js';

export type FloatDType = 'F32' | 'F16' | 'BF16';

export interface RandomWeightOptions {
  seed?: number;
  /** MLX affine layout for quantizable modules. Load the result with `withQuantization(config, q)`. */
  quantize?: QuantParams;
  /** Float storage; default from the config's `torch_dtype` / `dtype` (bfloat16, float16), else F32. */
  dtype?: FloatDType;
}

/** The float dtype a config declares for its stored weights (formats.md §d: informational, our default). */
export function configDType(config: Record<string, unknown>): FloatDType {
  const d = config.torch_dtype ?? config.dtype;
  if (d === 'bfloat16') return 'BF16';
  if (d === 'float16') return 'F16';
  return 'F32';
}

/** A copy of `config` with mlx-lm's quantization block (and its `quantization_config` twin). */
export function withQuantization(config: Record<string, unknown>, q: QuantParams): Record<string, unknown> {
  const block = { group_size: q.groupSize, bits: q.bits };
  return { ...config, quantization: block, quantization_config: { ...block } };
}

const CHUNK = 1 << 20;

export class RandomCheckpoint {
  readonly store = new MemoryWeights();
  private readonly seed: number;
  readonly dtype: FloatDType;

  constructor(readonly opts: RandomWeightOptions, config: Record<string, unknown>) {
    this.seed = opts.seed ?? 0;
    this.dtype = opts.dtype ?? configDType(config);
  }

  private floats(name: string, shape: readonly number[], lo: number, hi: number): Tensor {
    const n = numel(shape);
    const rng = new Prng(seedFor(this.seed, name));
    if (this.dtype === 'F32') {
      const data = new Float32Array(n);
      rng.fillUniform(data, lo, hi);
      return Tensor.fromF32(data, shape);
    }
    // Fill in chunks so a bf16 table never needs an f32 copy of itself.
    const out = new Uint16Array(n);
    const tmp = new Float32Array(Math.min(CHUNK, n));
    for (let off = 0; off < n; off += CHUNK) {
      const len = Math.min(CHUNK, n - off);
      const src = tmp.subarray(0, len);
      rng.fillUniform(src, lo, hi);
      native.fromF32(src, this.dtype === 'F16' ? 1 : 2, out.subarray(off, off + len));
    }
    return new Tensor(this.dtype, shape, new Uint8Array(out.buffer));
  }

  /**
   * The weight of a Linear / Embedding / stacked expert module at `path` ([..., rows, cols]), values in
   * [-amp, amp]. Quantized when `quantize` was requested and cols is a multiple of the group size.
   */
  matrix(path: string, shape: readonly number[], amp: number): void {
    const q = this.opts.quantize;
    const cols = shape[shape.length - 1]!;
    if (!q || cols % q.groupSize !== 0) {
      this.store.set(`${path}.weight`, this.floats(`${path}.weight`, shape, -amp, amp));
      return;
    }
    const lead = shape.slice(0, -1);
    const words = new Uint32Array((numel(lead) * cols * q.bits) / 32);
    new Prng(seedFor(this.seed, `${path}.weight`)).fillU32(words);
    this.store.set(`${path}.weight`, new Tensor('U32', [...lead, (cols * q.bits) / 32], new Uint8Array(words.buffer)));
    // W = s·code + b with codes uniform in [0, 2^b − 1]: s = 2·amp/(2^b − 1), b = −amp gives [-amp, amp];
    // the scales vary by ±10 % so that groups differ.
    const gshape = [...lead, cols / q.groupSize];
    const step = (2 * amp) / ((1 << q.bits) - 1);
    this.store.set(`${path}.scales`, this.floats(`${path}.scales`, gshape, 0.9 * step, 1.1 * step));
    this.store.set(`${path}.biases`, this.floats(`${path}.biases`, gshape, -1.05 * amp, -0.95 * amp));
  }

  /** A float vector (norm weights and biases, Linear biases — never quantized) in [center − amp, center + amp]. */
  vector(name: string, n: number, center: number, amp: number): void {
    this.store.set(name, this.floats(name, [n], center - amp, center + amp));
  }
}
