/**
 * One call that picks the cache class for a layer from its attention type and the requested storage
 * (StateOptions.kvCache): full-attention layers get an append-only cache, sliding layers a ring.
 */
import type { CacheOptions } from './base.js';
import { ContiguousCache, QuantizedCache } from './contiguous.js';
import { RotatingCache } from './rotating.js';
import { checkStorage, type KvStorage } from './storage.js';
import type { LayerCache } from './types.js';

export interface LayerCacheSpec {
  nKvHeads: number;
  headDim: number;
  vDim?: number;
  /** Sliding window W (a key at p is visible from q iff q − p < W); null/undefined/0 = full attention. */
  window?: number | null;
}

export function createLayerCache(spec: LayerCacheSpec, storage: KvStorage | string = 'f32', opts: CacheOptions = {}): LayerCache {
  const s = checkStorage(storage, 'createLayerCache');
  const vDim = spec.vDim ?? spec.headDim;
  if (spec.window) return new RotatingCache(spec.nKvHeads, spec.headDim, spec.window, vDim, { ...opts, dtype: s });
  if (s === 'q8' || s === 'k8v4') return new QuantizedCache(spec.nKvHeads, spec.headDim, vDim, { ...opts, vBits: s === 'q8' ? 8 : 4 });
  return new ContiguousCache(spec.nKvHeads, spec.headDim, vDim, { dtype: s });
}
