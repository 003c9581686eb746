/**
 * Per-sequence state: one LayerCache per layer. Layers that own KV get a contiguous (full attention)
 * or rotating (sliding window) cache; KV-shared layers get a SharedCache over their source layer's
 * cache, which reads the owner's K/V after the owner's update in the same forward and writes nothing.
 */
import { adoptLayers, createLayerCache, SharedCache, snapshotLayers, type LayerCache } from '@mlxcel/cache';
import { MlxcelError, type SequenceState, type StateOptions } from '@mlxcel/tensor';
import type { LayerType } from './layer-types.js';

/** What the caches of one model look like. */
export interface CacheLayout {
  types: readonly LayerType[];
  /** KV heads and head dim per layer (Gemma 4 full layers differ from sliding ones). */
  nKvHeads: readonly number[];
  headDims: readonly number[];
  slidingWindow: number;
  /** Layer whose cache each layer reads (itself when it owns one). */
  sources: readonly number[];
}

export class GemmaState implements SequenceState {
  readonly caches: LayerCache[];
  private _offset = 0;

  constructor(readonly layout: CacheLayout, private readonly opts: StateOptions = {}) {
    const kind = opts.kvCache ?? 'f32';
    this.caches = [];
    layout.types.forEach((t, l) => {
      const src = layout.sources[l]!;
      if (src !== l) {
        this.caches.push(new SharedCache(this.caches[src]!));
        return;
      }
      const nKv = layout.nKvHeads[l]!, hd = layout.headDims[l]!;
      const window = t === 'sliding_attention' ? layout.slidingWindow : null;
      this.caches.push(createLayerCache({ nKvHeads: nKv, headDim: hd, window }, kind));
    });
  }

  /** Tokens processed so far (the next token's position). */
  get offset(): number {
    return this._offset;
  }

  /** Called by the model once the whole forward succeeded. */
  advance(n: number): void {
    this._offset += n;
  }

  /** A deep copy: fresh caches of the same kinds holding a snapshot of these (shared layers re-linked). */
  fork(): GemmaState {
    const copy = new GemmaState(this.layout, this.opts);
    adoptLayers(copy.caches, snapshotLayers(this.caches));
    copy._offset = this._offset;
    return copy;
  }

  /** Drops the newest n tokens from every owning cache (right-padded prefill finalize, rollback). */
  trim(n: number): number {
    const dropped = Math.max(0, Math.min(n, this._offset));
    this.caches.forEach((c, l) => {
      if (c.kind === 'shared') return;
      const got = c.trim(dropped);
      if (got !== dropped) throw new MlxcelError('E_CACHE', `trim(${n}): layer ${l}'s ${c.kind} cache dropped ${got} of ${dropped} tokens`);
    });
    this._offset -= dropped;
    return dropped;
  }

  get nbytes(): number {
    return this.caches.reduce((s, c) => s + c.nbytes, 0);
  }
}
