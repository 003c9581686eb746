/**
 * Append-only caches for full-attention layers: slot i holds position i. Storage grows by pages of
 * 256+ slots (paged-store.ts) that never move. ContiguousCache stores f32/f16/bf16; QuantizedCache stores MLX
 * affine codes (8-bit K and V, or 8-bit K with 4-bit V) and refuses trims that reach quantized rows.
 */
import { MlxcelError } from '@mlxcel/tensor';
import { KvCacheBase, type CacheOptions } from './base.js';
import type { FloatDtype, KvStorage } from './storage.js';
import { PagedStore } from './paged-store.js';
import { range, type KvStore } from './store.js';
import type { DetachedCache } from './types.js';

const STEP = 256;

abstract class AppendCache extends KvCacheBase {
  protected override newMainStore(): KvStore {
    return new PagedStore(this.nKvHeads, this.headDim, this.vDim, this.format);
  }

  protected override reserveFor(tokens: number): boolean {
    this.main.reserve(Math.ceil(tokens / STEP) * STEP);
    return true;
  }

  protected commit(k: Float32Array, v: Float32Array, T: number, pos0: number): void {
    this.main.reserve(Math.ceil((this.used + T) / STEP) * STEP);
    this.main.write(range(this.used, this.used + T), k, v, range(pos0, pos0 + T));
    this.used += T;
  }

  protected refuseDrop(_n: number): string | null {
    return null;
  }

  protected dropMain(n: number): void {
    this.used -= n;
    this.main.clear(this.used);
  }

  protected ringState(): null {
    return null;
  }

  protected resetKind(): void {}

  protected prepareRestore(first: number, n: number): (p: number) => number {
    this.main.reserve(Math.ceil(n / STEP) * STEP);
    this.used = n - first; // first is 0: every position from 0
    return (p) => p;
  }

  protected checkState(s: DetachedCache): void {
    if (s.main.n + s.staging.n !== s.offset)
      throw new MlxcelError('E_CACHE_ADOPT', `${this.who}.adopt: ${s.main.n} + ${s.staging.n} rows do not add up to offset ${s.offset}`);
    for (let i = 0; i < s.main.n; i++)
      if (s.main.pos[i] !== i)
        throw new MlxcelError('E_CACHE_ADOPT', `${this.who}.adopt: slot ${i} holds position ${s.main.pos[i]} (an append-only cache holds position i in slot i)`);
  }

  protected restoreMain(s: DetachedCache): void {
    this.main.reserve(Math.ceil(s.main.n / STEP) * STEP);
    this.main.importImage(range(0, s.main.n), s.main);
    this.used = s.main.n;
  }
}

export interface ContiguousOptions {
  /** Storage dtype; default 'f32' (README: why). */
  dtype?: FloatDtype;
}

export class ContiguousCache extends AppendCache {
  readonly kind = 'contiguous' as const;

  constructor(nKvHeads: number, headDim: number, vDim: number = headDim, opts: ContiguousOptions = {}) {
    const dtype = opts.dtype ?? 'f32';
    if (dtype !== 'f32' && dtype !== 'f16' && dtype !== 'bf16')
      throw new MlxcelError('E_CACHE_STORAGE', `contiguous cache: dtype ${JSON.stringify(dtype)} is not f32, f16 or bf16 (quantized storage is QuantizedCache)`);
    super(nKvHeads, headDim, vDim, dtype, {}, 'contiguous cache');
  }
}

export interface QuantizedOptions extends CacheOptions {
  /** V bits: 8 ('q8', default) or 4 ('k8v4'). K is always 8-bit. */
  vBits?: 8 | 4;
}

export class QuantizedCache extends AppendCache {
  readonly kind = 'quantized' as const;

  constructor(nKvHeads: number, headDim: number, vDim: number = headDim, opts: QuantizedOptions = {}) {
    const vBits = opts.vBits ?? 8;
    if (vBits !== 8 && vBits !== 4) throw new MlxcelError('E_CACHE_STORAGE', `quantized cache: vBits must be 8 or 4, got ${vBits}`);
    const storage: KvStorage = vBits === 8 ? 'q8' : 'k8v4';
    super(nKvHeads, headDim, vDim, storage, opts, 'quantized cache');
  }

  protected override refuseDrop(n: number): string | null {
    return quantizedRefusal(n, this.committed, this._staged);
  }
}

/** The refusal of a trim that would reach quantized rows (shared with quantized rotating caches). */
export function quantizedRefusal(n: number, committed: number, staged: number): string {
  return (
    `it would drop ${n} quantized row(s) (positions ${committed - n}..${committed - 1}). Quantized rows are final: only the ` +
    `${staged} row(s) held past the cap can be trimmed; set a cap at the true length (setCap) before a padded prefill or a speculative step`
  );
}
