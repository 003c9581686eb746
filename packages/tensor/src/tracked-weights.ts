/**
 * A WeightStore view that records which tensors the loader consumed, so that a checkpoint with extra
 * tensors the architecture does not use (a wrong model_type, a half-converted file, a layer count that
 * does not match config.json) fails at load instead of being silently ignored (issue 6: "extra
 * unexpected tensors ... fail at load with an error naming the tensor"). Shared by every architecture:
 * Phi checks the whole store, Gemma the text tower's tensors (multimodal towers are loaded elsewhere).
 */
import { MlxcelError } from './errors.js';
import type { Tensor } from './tensor.js';
import type { WeightStore } from './checkpoint.js';

export class TrackedWeights implements WeightStore {
  private readonly used = new Set<string>();
  constructor(private readonly inner: WeightStore) {}
  /** A random-weight store's quantization block (loaders read it when config.json has none). */
  get quantization(): unknown {
    return (this.inner as { quantization?: unknown }).quantization;
  }
  has(name: string): boolean {
    return this.inner.has(name);
  }
  get(name: string): Tensor {
    const t = this.inner.get(name);
    this.used.add(name);
    return t;
  }
  keys(): string[] {
    return this.inner.keys();
  }
  /** Marks tensors the architecture knowingly drops (e.g. `rotary_emb.inv_freq` buffers). */
  ignore(pattern: RegExp): void {
    for (const k of this.inner.keys()) if (pattern.test(k)) this.used.add(k);
  }
  /** Throws E_UNEXPECTED_TENSOR naming the first few tensors nothing read (among those `inScope` accepts). */
  assertAllUsed(family: string, inScope: (name: string) => boolean = () => true): void {
    const extra = this.inner.keys().filter((k) => !this.used.has(k) && inScope(k)).sort();
    if (extra.length === 0) return;
    const shown = extra.slice(0, 5).join(', ') + (extra.length > 5 ? `, … (${extra.length} in all)` : '');
    throw new MlxcelError('E_UNEXPECTED_TENSOR', `${family}: checkpoint has tensors this architecture does not use: ${shown}`);
  }
}
