export type { AttendOptions, BlockSparse, CacheKind, DetachedCache, LayerCache } from './types.js';
export { type FloatDtype, type GroupSize, type KvStorage, type StoreFormat, KV_STORAGES, isKvStorage, storeFormat } from './storage.js';
export { TiledStore, TILE, KvBufferRecycler, kvBuffers, sliceImage, concatImages, slotBytes, imageBytes, type KvStore, type StoreImage } from './store.js';
export { PagedStore, PAGE_SLOTS, pageSlotsFor } from './paged-store.js';
export { KvCacheBase, type CacheOptions, type RestoreOptions } from './base.js';
export { ContiguousCache, QuantizedCache, type ContiguousOptions, type QuantizedOptions } from './contiguous.js';
export { RotatingCache, ringRestoreStart, ringSizeFor, type RotatingOptions } from './rotating.js';
export { SharedCache } from './shared.js';
export { attendBatch, type AttendItem, type BatchAttendOptions } from './attend.js';
export { createLayerCache, type LayerCacheSpec } from './factory.js';
export { phi3SmallBlockSparse, spansFromTokenTypes, type Phi3SmallSparseConfig } from './masks.js';
export { snapshotLayers, detachLayers, adoptLayers, sourceOf, type DetachedSequence } from './state.js';
export {
  savePromptCache, loadPromptCache, readPromptCache, configHash,
  type PromptCacheInfo, type PromptCacheExpect, type PromptCacheMeta, type LayerMeta,
} from './prompt-cache.js';
export {
  PrefixPool, PrefixTrack, layerLayout, prefixNamespace,
  type LayerLayout, type PrefixBlock, type PrefixRoot, type PrefixHit, type PrefixPoolOptions, type PrefixPoolStats,
} from './prefix-pool.js';
export { kvBytesFor, kvBytesReadPerStep } from './kv-bytes.js';
