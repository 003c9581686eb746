/**
 * Per-sequence state of a Phi model: one KV cache per layer, the token ids fed so far and the RoPE
 * regime the cached keys were rotated with. The ids are kept because a LongRoPE sequence that
 * crosses original_max_position_embeddings must be re-encoded from scratch with the long table
 * (docs/architecture/phi3.md §4.4, rule 2: HF discards the cache and re-prefills), and because a trimmed sliding-window
 * cache may have evicted keys it would need again.
 */
import { adoptLayers, snapshotLayers, type LayerCache } from '@mlxcel/cache';
import type { RopeRegime } from '@mlxcel/rope';
import { MlxcelError, type SequenceState } from '@mlxcel/tensor';

/** True when a cache no longer holds position 0 (a sliding-window ring overwrote its oldest keys). */
function evicted(c: LayerCache): boolean {
  const pos = c.slotPositions();
  for (let i = 0; i < pos.length; i++) if (pos[i] === 0) return false;
  return c.offset > 0;
}

export class PhiSequence implements SequenceState {
  caches: LayerCache[];
  /** Regime of the keys now in the caches (null before the first step). */
  regime: RopeRegime | null = null;
  /**
   * Length the RoPE regime is decided from at least: the largest `expectLength` since the last trim.
   * Keeps a sequence prefilled under the long table long while it decodes up to the announced length
   * (docs/architecture/phi3.md §4.4 rule 3: never back from long to short); a trim clears it, so a trimmed sequence is
   * re-encoded exactly as a fresh run of its ids would be.
   */
  lengthFloor = 0;
  /** Set when the caches can no longer reproduce the ids (trim of a rotating cache): re-encode next step. */
  stale = false;
  private idBuf = new Int32Array(64);
  private nIds = 0;

  constructor(readonly owner: object, private readonly makeCaches: () => LayerCache[]) {
    this.caches = makeCaches();
  }

  get offset(): number {
    return this.nIds;
  }

  /** Token ids fed so far (a view; valid until the next append). */
  get ids(): Int32Array {
    return this.idBuf.subarray(0, this.nIds);
  }

  get nbytes(): number {
    let n = 0;
    for (const c of this.caches) n += c.nbytes;
    return n;
  }

  /**
   * The length this sequence will reach once the prompt now being fed is in (cached + whole prompt):
   * the LongRoPE regime is chosen from it from the first chunk on, so chunked prefill equals one pass
   * instead of re-encoding at the crossing. Held until a trim.
   */
  expectLength(total: number): void {
    if (!(Number.isInteger(total) && total >= 0))
      throw new MlxcelError('E_INPUT', `PhiSequence.expectLength: the expected length must be a non-negative integer, got ${String(total)}`);
    this.lengthFloor = Math.max(this.lengthFloor, total);
  }

  /** Fresh caches; the ids stay (the caller re-feeds them). */
  resetCaches(): void {
    this.caches = this.makeCaches();
    this.regime = null;
    this.stale = false;
  }

  /** Forgets everything (ids included). */
  clearIds(): void {
    this.nIds = 0;
  }

  appendIds(ids: Int32Array): void {
    if (this.nIds + ids.length > this.idBuf.length) {
      const grown = new Int32Array(Math.max(this.idBuf.length * 2, this.nIds + ids.length));
      grown.set(this.ids);
      this.idBuf = grown;
    }
    this.idBuf.set(ids, this.nIds);
    this.nIds += ids.length;
  }

  /** A deep copy (caches snapshotted into fresh ones of the same kinds, ids and RoPE bookkeeping). */
  fork(): PhiSequence {
    const copy = new PhiSequence(this.owner, this.makeCaches);
    adoptLayers(copy.caches, snapshotLayers(this.caches));
    copy.appendIds(this.ids);
    copy.regime = this.regime;
    copy.lengthFloor = this.lengthFloor;
    copy.stale = this.stale;
    return copy;
  }

  trim(n: number): number {
    const drop = Math.max(0, Math.min(Math.floor(n), this.nIds));
    if (drop === 0) return 0;
    this.lengthFloor = 0;
    for (const c of this.caches) {
      // A rotating cache cannot bring back keys it already overwrote: rebuild from the ids next step.
      if (c.kind === 'rotating' && evicted(c)) this.stale = true;
      if (c.trim(drop) !== drop) this.stale = true;
    }
    this.nIds -= drop;
    return drop;
  }
}
