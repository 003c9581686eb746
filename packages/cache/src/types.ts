import type { KvSegmentDesc } from '@mlxcel/core-native';
import type { KvStorage } from './storage.js';
import type { StoreImage } from './store.js';

/**
 * Phi-3-small block-sparse visibility (docs/architecture/phi3small.md §4.3), ANDed with causal/window: with
 * qb = floor(qPos / blockSize) and kb = floor(kPos / blockSize), a key is visible to query head h iff
 * qb − kb < localBlocks or (kb + h·headStep + 1) mod vertStride = 0. headStep 0 = one pattern for all heads.
 */
export interface BlockSparse {
  blockSize: number;
  localBlocks: number;
  vertStride: number;
  headStep?: number;
}

/** Options of one attention call over a layer's cache. */
export interface AttendOptions {
  /** Score scale (usually 1/sqrt(head_dim); some models override it). */
  scale: number;
  /** Logit soft-capping: s = cap * tanh(s / cap). 0 or undefined = off. */
  softcap?: number;
  /** Sliding window: a key at position p is visible to a query at q iff q - p < window. */
  window?: number;
  /** Default true: keys after the query position are invisible. */
  causal?: boolean;
  /** Block-sparse pattern (Phi-3-small sparse layers). */
  blockSparse?: BlockSparse;
  /**
   * Bidirectional spans, [start, end) position pairs (multimodal rows): a query and a key inside the
   * same span see each other whatever the causal/window/block rule says. Masks still apply.
   */
  spans?: Int32Array;
  /** Extra visibility mask [maskHeads, Tq, nKv slots], nonzero = visible (ANDed). Slot order = `slotPositions()`. */
  mask?: Uint8Array;
  maskHeads?: number;
}

export type CacheKind = 'contiguous' | 'rotating' | 'shared' | 'quantized';

/**
 * A layer cache's complete state, detached from any cache object: enough to rebuild it bit-exactly
 * (`adopt`). Images hold the exact stored bits (head-major), so a 4-bit V stays 4-bit.
 */
export interface DetachedCache {
  readonly version: 1;
  kind: CacheKind;
  storage: KvStorage;
  kBits: number;
  vBits: number;
  groupSize: number;
  nKvHeads: number;
  headDim: number;
  vDim: number;
  /** Sliding window of a rotating cache; 0 otherwise. */
  window: number;
  offset: number;
  cap: number | null;
  /** Opaque id of the RoPE table the keys were rotated with ('' = not recorded). */
  ropeRegime: string;
  /** Finalized rows in slot order. */
  main: StoreImage;
  /** Rows held in f32 past the cap, in position order. */
  staging: StoreImage;
  /** Rotating caches: ring size and next write slot. */
  ring: { size: number; next: number } | null;
}

/**
 * One layer's KV storage for one sequence. Keys are stored post-RoPE. Positions are absolute token
 * positions; `offset` is the number of tokens this cache has seen.
 */
export interface LayerCache {
  readonly kind: CacheKind;
  readonly offset: number;
  readonly nKvHeads: number;
  readonly headDim: number;
  readonly vDim: number;
  /** How K/V are stored (a shared cache reports its owner's). */
  readonly storage: KvStorage;
  /** Appends T rows of K [T, nKvHeads, headDim] and V [T, nKvHeads, vDim] at positions offset..offset+T-1. */
  update(k: Float32Array, v: Float32Array, T: number): void;
  /** Attention of q [Tq, nHeads, headDim] at absolute positions qPos over the stored keys: [Tq, nHeads, vDim]. */
  attend(q: Float32Array, Tq: number, nHeads: number, qPos: Int32Array, opts: AttendOptions): Float32Array;
  /** Absolute position of each storage slot (-1 = empty), in the order a mask must use. */
  slotPositions(): Int32Array;
  /**
   * Drops the last n tokens; returns how many were dropped (n clamped to offset). Rows past the cap
   * always go exactly; a trim that would reach quantized rows throws E_CACHE_TRIM and changes nothing.
   */
  trim(n: number): number;
  /** Bytes of K/V storage held. */
  readonly nbytes: number;
  /**
   * Padded-prefill cap: rows at positions >= cap are held in f32 outside the finalized storage (never
   * quantized, never evicting ring slots), so trimming them restores exactly the state without them.
   * null lifts the cap and finalizes the held rows. A cap below the finalized rows throws E_CACHE_CAP.
   */
  readonly cap: number | null;
  setCap(cap: number | null): void;
  /** Rows currently held past the cap. */
  readonly staged: number;
  /** RoPE regime id of the stored keys (opaque; travels with snapshots and prompt caches). */
  ropeRegime: string;
  /** The KV segments the attention kernel reads (views of live storage; valid until the next mutation). */
  segments(): KvSegmentDesc[];
  /** A deep, bit-exact copy of the state. */
  snapshot(): DetachedCache;
  /** Moves the state out (as `snapshot`) and leaves this cache empty. */
  detach(): DetachedCache;
  /** Replaces this cache's state with a detached one (same kind, geometry and storage; copied). */
  adopt(state: DetachedCache): void;
}
