/**
 * A layer that reads an earlier layer's KV (Gemma 3n / Gemma 4 KV-shared layers) and writes nothing.
 * The caller passes query positions computed from the step's starting offset (read once per forward,
 * before the layer loop) — never from the owner's offset, which has already advanced this step.
 */
import type { KvSegmentDesc } from '@mlxcel/core-native';
import { MlxcelError } from '@mlxcel/tensor';
import { attendOne } from './attend.js';
import type { KvStorage } from './storage.js';
import { TiledStore } from './store.js';
import { STAGING_FORMAT } from './storage.js';
import type { AttendOptions, DetachedCache, LayerCache } from './types.js';

export class SharedCache implements LayerCache {
  readonly kind = 'shared' as const;
  constructor(readonly owner: LayerCache) {
    if (!owner || typeof owner.segments !== 'function')
      throw new MlxcelError('E_CACHE', 'shared cache: owner must be a LayerCache');
  }
  get offset(): number {
    return this.owner.offset;
  }
  get nKvHeads(): number {
    return this.owner.nKvHeads;
  }
  get headDim(): number {
    return this.owner.headDim;
  }
  get vDim(): number {
    return this.owner.vDim;
  }
  get storage(): KvStorage {
    return this.owner.storage;
  }
  get nbytes(): number {
    return 0;
  }
  get cap(): number | null {
    return this.owner.cap;
  }
  get staged(): number {
    return this.owner.staged;
  }
  /** The owner's regime: the keys this layer reads were rotated by the owner. */
  get ropeRegime(): string {
    return this.owner.ropeRegime;
  }
  set ropeRegime(_r: string) {
    throw new MlxcelError('E_CACHE', 'shared cache: the RoPE regime belongs to the owner layer (set it there)');
  }
  update(): void {
    throw new MlxcelError('E_CACHE', 'shared cache: a KV-shared layer must not write K/V (it reads its owner layer)');
  }
  setCap(): void {
    // The owner layer holds the rows; its cap is set on the owner.
  }
  attend(q: Float32Array, Tq: number, nHeads: number, qPos: Int32Array, opts: AttendOptions): Float32Array {
    return attendOne(this, q, Tq, nHeads, qPos, opts);
  }
  segments(): KvSegmentDesc[] {
    return this.owner.segments();
  }
  slotPositions(): Int32Array {
    return this.owner.slotPositions();
  }
  trim(): number {
    return 0; // the owner layer trims its own storage
  }
  /** Nothing of its own: a shared layer's state is its owner's. */
  snapshot(): DetachedCache {
    const empty = new TiledStore(this.nKvHeads, this.headDim, this.vDim, STAGING_FORMAT).emptyImage(0);
    return {
      version: 1, kind: 'shared', storage: this.storage, kBits: 0, vBits: 0, groupSize: 0,
      nKvHeads: this.nKvHeads, headDim: this.headDim, vDim: this.vDim, window: 0,
      offset: this.offset, cap: null, ropeRegime: '', main: empty, staging: empty, ring: null,
    };
  }
  detach(): DetachedCache {
    return this.snapshot();
  }
  adopt(state: DetachedCache): void {
    if (!state || state.kind !== 'shared')
      throw new MlxcelError('E_CACHE_ADOPT', `shared cache.adopt: state is a ${state?.kind} cache, this is a shared cache`);
  }
}
