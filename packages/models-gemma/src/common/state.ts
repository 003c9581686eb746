/**
 * Per-sequence state of a Gemma model: one LayerCache per layer (models-core `buildLayerCaches`):
 * layers that own KV get a contiguous (full attention) or rotating (sliding window) cache; KV-shared
 * layers a SharedCache over their source layer's cache, which reads the owner's K/V after the
 * owner's update in the same forward and writes nothing.
 */
import { adoptLayers, snapshotLayers, type LayerCache } from '@mlxcel/cache';
import { buildLayerCaches, checkRestored, type LayerCacheSpec, type PrefixReusableState } from '@mlxcel/models-core';
import { MlxcelError, type SequenceState, type StateOptions } from '@mlxcel/tensor';

export class GemmaState implements SequenceState, PrefixReusableState {
  readonly caches: LayerCache[];
  private _offset = 0;

  constructor(readonly specs: readonly LayerCacheSpec[], private readonly opts: StateOptions = {}) {
    this.caches = buildLayerCaches(specs, opts.kvCache);
  }

  /** Tokens processed so far (the next token's position). */
  get offset(): number {
    return this._offset;
  }

  /** Called by the model once the whole forward succeeded. */
  advance(n: number): void {
    this._offset += n;
  }

  /**
   * Gemma builds one RoPE table per layer type for every length (a spec with several regimes is
   * refused at load), so the keys of any prompt are rotated alike: the config fixes the regime.
   */
  keyRegime(_totalLength: number): string {
    return 'gemma:one-table-per-layer-type';
  }

  /** Restored rows [0, n) (prefix reuse): the caches hold them, the state takes them as processed. */
  adoptRestoredPrefix(_ids: Int32Array, n: number, _totalLength: number): void {
    if (this._offset !== 0) throw new MlxcelError('E_STATE', `adoptRestoredPrefix: the state already holds ${this._offset} tokens`);
    checkRestored(this.caches, n, 'GemmaState');
    this._offset = n;
  }

  /** A deep copy: fresh caches of the same kinds holding a snapshot of these (shared layers re-linked). */
  fork(): GemmaState {
    const copy = new GemmaState(this.specs, this.opts);
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
