/**
 * Sliding-window cache: a ring of slots keeping at least the last window-1 positions plus the
 * current chunk (a chunk of T tokens at p0 needs keys from p0-window+1 on), so a prefill longer than
 * the window still attends correctly inside the chunk. Any storage format.
 *
 * Ring invariant (what the prompt-cache format relies on): the slots in use hold consecutive
 * positions; when the ring is full, slot `next` holds the oldest and `next-1` the newest.
 */
import { MlxcelError } from '@mlxcel/tensor';
import { KvCacheBase, type CacheOptions, type RestoreOptions } from './base.js';
import { quantizedRefusal } from './contiguous.js';
import type { KvStorage } from './storage.js';
import { range, TiledStore } from './store.js';
import type { DetachedCache } from './types.js';

const STEP = 256;

/**
 * First position a ring restored to offset n must hold: its window's n − window + 1, rounded down to a
 * tile (16 slots) so that a ring restored with only its window tiles positions on the same boundaries
 * as one that never wrapped (the extra rows are outside the window and masked).
 */
export function ringRestoreStart(n: number, window: number): number {
  return Math.floor(Math.max(0, n - (window - 1)) / 16) * 16;
}

/** Slots of a fresh ring after its first commit of `firstChunk` rows (it never grows after, for chunks no larger). */
export function ringSizeFor(window: number, firstChunk: number): number {
  return Math.ceil((window - 1 + Math.max(1, firstChunk)) / STEP) * STEP;
}

export interface RotatingOptions extends CacheOptions {
  /** Storage; default 'f32'. Quantized rings refuse trims that reach quantized rows. */
  dtype?: KvStorage;
}

export class RotatingCache extends KvCacheBase {
  readonly kind = 'rotating' as const;
  /** Logical ring size (slots); grows when a chunk needs more than window-1+T. */
  private size = 0;
  /** Next slot to overwrite once the ring is full (the oldest position). */
  private next = 0;

  constructor(nKvHeads: number, headDim: number, readonly window: number, vDim: number = headDim, opts: RotatingOptions = {}) {
    super(nKvHeads, headDim, vDim, opts.dtype ?? 'f32', opts, 'rotating cache');
    if (!Number.isInteger(window) || window < 1) throw new MlxcelError('E_CACHE', `rotating cache: window must be a positive integer, got ${window}`);
  }

  protected override windowSize(): number {
    return this.window;
  }

  protected commit(k: Float32Array, v: Float32Array, T: number, pos0: number): void {
    const need = this.window - 1 + T;
    if (this.size < need) {
      this.linearize(Math.ceil(need / STEP) * STEP);
    }
    const slots = new Int32Array(T);
    for (let t = 0; t < T; t++) {
      if (this.used < this.size) slots[t] = this.used++;
      else {
        slots[t] = this.next;
        this.next = (this.next + 1) % this.size;
      }
    }
    this.main.write(slots, k, v, range(pos0, pos0 + T));
  }

  /** Rewrites the ring in temporal order (oldest in slot 0) with `size` slots; exact bit copies. */
  private linearize(size: number): void {
    const order = this.temporalOrder();
    const im = this.main.exportImage(order);
    const store = new TiledStore(this.nKvHeads, this.headDim, this.vDim, this.format);
    store.reserve(size);
    store.importImage(range(0, im.n), im);
    this.main.release();
    this.main = store;
    this.size = size;
    this.used = im.n;
    this.next = 0;
  }

  private temporalOrder(): Int32Array {
    const order = new Int32Array(this.used);
    const start = this.used < this.size ? 0 : this.next;
    for (let i = 0; i < this.used; i++) order[i] = (start + i) % this.used;
    return order;
  }

  protected refuseDrop(n: number): string | null {
    if (this.format.quantized) return quantizedRefusal(n, this.committed, this._staged);
    if (n > this.used) return `only ${this.used} finalized position(s) are still stored (window ${this.window})`;
    return null;
  }

  /**
   * Drops the newest n finalized positions. Positions the ring already overwrote do not come back:
   * afterwards queries see fewer than window-1 past keys until the gap scrolls out (callers that need
   * exactness re-encode; a cap keeps padding from evicting anything in the first place).
   */
  protected dropMain(n: number): void {
    const order = this.temporalOrder().subarray(0, this.used - n);
    const im = this.main.exportImage(order);
    const store = new TiledStore(this.nKvHeads, this.headDim, this.vDim, this.format);
    store.reserve(this.size);
    store.importImage(range(0, im.n), im);
    this.main.release();
    this.main = store;
    this.used = im.n;
    this.next = 0;
  }

  protected ringState(): { size: number; next: number } {
    return { size: this.size, next: this.next };
  }

  protected resetKind(): void {
    this.size = 0;
    this.next = 0;
  }

  /** What a fresh ring of this prompt would still hold at offset n: the last ringSizeFor(…) positions. */
  protected override restoreFrom(n: number, opts: RestoreOptions): number {
    return Math.max(0, n - ringSizeFor(this.window, opts.firstChunk ?? 1));
  }

  /** A query at position n or later sees keys from n − window + 1 on: the ring needs nothing older. */
  protected override restoreNeed(n: number): number {
    return ringRestoreStart(n, this.window);
  }

  /**
   * Given everything a fresh ring would hold, the restored ring is that ring: its size, position p in
   * slot p mod size, the same write slot — so attention reads the same tiles in the same order and
   * later writes land where they would. Given less (only the window), the rows go to slots 0.. oldest
   * first: the same keys, in tiles ordered otherwise.
   */
  protected prepareRestore(first: number, n: number, opts: RestoreOptions): (p: number) => number {
    this.size = ringSizeFor(this.window, opts.firstChunk ?? 1);
    this.main.reserve(this.size);
    this.used = n - first;
    if (first === Math.max(0, n - this.size)) {
      const size = this.size;
      this.next = n >= size ? n % size : 0;
      return (p) => p % size;
    }
    this.next = 0;
    return (p) => p - first;
  }

  protected checkState(s: DetachedCache): void {
    const bad = (what: string): never => {
      throw new MlxcelError('E_CACHE_ADOPT', `${this.who}.adopt: ${what}`);
    };
    if (!s.ring) bad('state has no ring (not a rotating cache state)');
    const { size, next } = s.ring!;
    if (!Number.isInteger(size) || size < s.main.n || size % 16 !== 0) bad(`ring size ${size} cannot hold ${s.main.n} slots`);
    if (!Number.isInteger(next) || next < 0 || (next > 0 && (s.main.n !== size || next >= size))) bad(`ring write slot ${next} is not valid for ${s.main.n} of ${size} slots`);
    const first = s.offset - s.staging.n - s.main.n;
    for (let i = 0; i < s.main.n; i++) {
      const slot = (next + i) % Math.max(1, s.main.n);
      if (s.main.pos[slot] !== first + i) bad(`slot ${slot} holds position ${s.main.pos[slot]}, the ring order says ${first + i}`);
    }
  }

  protected restoreMain(s: DetachedCache): void {
    this.main.reserve(s.ring!.size);
    this.main.importImage(range(0, s.main.n), s.main);
    this.used = s.main.n;
    this.size = s.ring!.size;
    this.next = s.ring!.next;
  }
}
