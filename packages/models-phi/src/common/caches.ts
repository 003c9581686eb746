/**
 * Which @mlxcel/cache storage a layer gets. Storage kinds other than f32 (StateOptions.kvCache 'f16',
 * 'bf16', 'q8', 'k8v4') are being added to @mlxcel/cache; until they exist there, asking for one is a
 * clear error rather than a silent fallback to f32.
 */
import { ContiguousCache, RotatingCache, type LayerCache } from '@mlxcel/cache';
import { MlxcelError } from '@mlxcel/tensor';

export interface LayerCacheSpec {
  nKvHeads: number;
  headDim: number;
  /** Sliding window W (a key at p is visible from q iff q − p < W); null = unbounded. */
  window: number | null;
}

export function makeLayerCache(spec: LayerCacheSpec, kind: string | undefined): LayerCache {
  if (kind !== undefined && kind !== 'f32')
    throw new MlxcelError('E_CACHE_KIND', `kvCache "${kind}" is not available for Phi models yet (@mlxcel/cache provides f32 storage only)`);
  return spec.window === null
    ? new ContiguousCache(spec.nKvHeads, spec.headDim)
    : new RotatingCache(spec.nKvHeads, spec.headDim, spec.window);
}
