/**
 * Which @mlxcel/cache storage a layer gets: full-attention layers an append-only cache, sliding layers
 * a ring, in the storage asked for by StateOptions.kvCache ('f32' default, 'f16', 'bf16', 'q8', 'k8v4').
 * Unknown kinds fail in @mlxcel/cache with the list of valid ones.
 */
import { createLayerCache, type LayerCache } from '@mlxcel/cache';

export interface LayerCacheSpec {
  nKvHeads: number;
  headDim: number;
  /** Sliding window W (a key at p is visible from q iff q − p < W); null = unbounded. */
  window: number | null;
}

export function makeLayerCache(spec: LayerCacheSpec, kind: string | undefined): LayerCache {
  return createLayerCache({ nKvHeads: spec.nKvHeads, headDim: spec.headDim, window: spec.window }, kind ?? 'f32');
}
