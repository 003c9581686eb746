/**
 * Which @mlxcel/cache storage each layer of a sequence gets: full-attention layers an append-only
 * cache, sliding layers a ring (see attention.ts for the window convention), KV-shared layers
 * (Gemma 3n / Gemma 4 `num_kv_shared_layers`) a SharedCache reading their source layer's cache, in
 * the storage StateOptions.kvCache asks for ('f32' default, 'f16', 'bf16', 'q8', 'k8v4'; an unknown
 * kind fails in @mlxcel/cache with the list of valid ones).
 */
import { createLayerCache, SharedCache, type LayerCache } from '@mlxcel/cache';
import type { AttentionGeometry } from './attention.js';

export interface LayerCacheSpec {
  nKvHeads: number;
  headDim: number;
  /** Sliding window W; null = full attention. */
  window: number | null;
  /** The earlier layer whose cache this layer reads (KV sharing); absent = its own cache. */
  source?: number;
}

/** The cache spec of a layer attending with geometry `g` (optionally reading layer `source`'s cache). */
export function cacheSpecOf(g: AttentionGeometry, source?: number): LayerCacheSpec {
  return { nKvHeads: g.nKvHeads, headDim: g.headDim, window: g.window, ...(source !== undefined ? { source } : {}) };
}

/** One cache per layer, in storage `kind`. */
export function buildLayerCaches(specs: readonly LayerCacheSpec[], kind: string | undefined): LayerCache[] {
  const caches: LayerCache[] = [];
  specs.forEach((s, l) => {
    if (s.source !== undefined && s.source !== l) caches.push(new SharedCache(caches[s.source]!));
    else caches.push(createLayerCache({ nKvHeads: s.nKvHeads, headDim: s.headDim, window: s.window }, kind ?? 'f32'));
  });
  return caches;
}
