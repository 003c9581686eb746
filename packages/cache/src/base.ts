/**
 * What contiguous, rotating and quantized caches share: a main store of finalized rows (any storage
 * format; the subclass decides which slot each row takes), an f32 staging store for rows at or past
 * the cap, offset/cap bookkeeping, trim, attention and snapshot/detach/adopt.
 *
 * Why staging: a batched prefill pads short sequences to a common length. Padding written into
 * quantized storage, or into a ring where it evicts real keys, could not be taken back; held apart in
 * f32 it is dropped exactly by `trim`, leaving the state bit-identical to an unpadded run.
 */
import type { KvSegmentDesc } from '@mlxcel/core-native';
import { MlxcelError } from '@mlxcel/tensor';
import { attendOne } from './attend.js';
import { STAGING_FORMAT, storeFormat, type GroupSize, type KvStorage, type StoreFormat } from './storage.js';
import { copyImage, range, sliceImage, TiledStore, type KvStore, type StoreImage } from './store.js';
import type { AttendOptions, CacheKind, DetachedCache, LayerCache } from './types.js';

/** How a restored ring lays out its slots (prefix reuse). */
export interface RestoreOptions {
  /**
   * The first prefill chunk a fresh sequence of this prompt would commit (it sizes a fresh ring);
   * a restored ring then takes the same size and slots. Default 1.
   */
  firstChunk?: number;
}

export interface CacheOptions {
  /** Quantization group along the head dim (quantized storage only; default 64, or 32 when 64 does not divide). */
  groupSize?: GroupSize;
}

export abstract class KvCacheBase implements LayerCache {
  abstract readonly kind: Exclude<CacheKind, 'shared'>;
  readonly format: StoreFormat;
  ropeRegime = '';
  protected main: KvStore;
  /** Main slots in use. */
  protected used = 0;
  protected staging: TiledStore;
  protected _staged = 0;
  protected _offset = 0;
  protected _cap: number | null = null;

  constructor(
    readonly nKvHeads: number,
    readonly headDim: number,
    readonly vDim: number,
    storage: KvStorage,
    opts: CacheOptions,
    protected readonly who: string,
  ) {
    for (const [name, x] of [['nKvHeads', nKvHeads], ['headDim', headDim], ['vDim', vDim]] as const)
      if (!Number.isInteger(x) || x < 1) throw new MlxcelError('E_CACHE', `${who}: ${name} must be a positive integer, got ${x}`);
    this.format = storeFormat(storage, headDim, vDim, opts.groupSize, who);
    this.main = this.newMainStore();
    this.staging = new TiledStore(nKvHeads, headDim, vDim, STAGING_FORMAT);
  }

  get storage(): KvStorage {
    return this.format.storage;
  }
  get offset(): number {
    return this._offset;
  }
  get cap(): number | null {
    return this._cap;
  }
  get staged(): number {
    return this._staged;
  }
  get nbytes(): number {
    return this.main.nbytes + this.staging.nbytes;
  }
  /** Positions held in the main store (finalized). */
  protected get committed(): number {
    return this._offset - this._staged;
  }

  // ---- subclass hooks ------------------------------------------------------------------------
  /** An empty main store (one buffer set; append-only caches use pages, see paged-store.ts). */
  protected newMainStore(): KvStore {
    return new TiledStore(this.nKvHeads, this.headDim, this.vDim, this.format);
  }
  /** Writes T finalized rows at positions pos0.. into the main store. */
  protected abstract commit(k: Float32Array, v: Float32Array, T: number, pos0: number): void;
  /** Why the newest n finalized rows cannot be dropped, or null when they can. */
  protected abstract refuseDrop(n: number): string | null;
  protected abstract dropMain(n: number): void;
  protected abstract ringState(): { size: number; next: number } | null;
  /** Rebuilds the main store from a validated detached state. */
  protected abstract restoreMain(state: DetachedCache): void;
  /** Kind-specific checks of a detached state about to be adopted. */
  protected abstract checkState(state: DetachedCache): void;
  /** Earliest position worth restoring at offset n (0; a ring: what a fresh ring would still hold). */
  protected restoreFrom(_n: number, _opts: RestoreOptions): number {
    return 0;
  }
  /** Earliest position a cache restored to offset n must hold (0; a ring: its window). */
  protected restoreNeed(_n: number): number {
    return 0;
  }
  /**
   * Makes the (reset) main store ready for positions [first, n) and returns the slot of each position;
   * sets `used` and any ring bookkeeping.
   */
  protected abstract prepareRestore(first: number, n: number, opts: RestoreOptions): (p: number) => number;

  // ---- writes --------------------------------------------------------------------------------
  update(k: Float32Array, v: Float32Array, T: number): void {
    if (!Number.isInteger(T) || T < 0) throw new MlxcelError('E_SHAPE', `${this.who}.update: T must be a non-negative integer, got ${T}`);
    const kr = this.nKvHeads * this.headDim, vr = this.nKvHeads * this.vDim;
    if (!(k instanceof Float32Array) || !(v instanceof Float32Array) || k.length < T * kr || v.length < T * vr)
      throw new MlxcelError('E_SHAPE', `${this.who}.update: K/V must be Float32Arrays of ${T} rows of [${this.nKvHeads}, ${this.headDim}] / [${this.nKvHeads}, ${this.vDim}]`);
    if (T === 0) return;
    const nCommit = this._cap === null ? T : Math.max(0, Math.min(T, this._cap - this._offset));
    if (nCommit > 0) this.commit(k.subarray(0, nCommit * kr), v.subarray(0, nCommit * vr), nCommit, this._offset);
    if (nCommit < T) this.stage(k.subarray(nCommit * kr, T * kr), v.subarray(nCommit * vr, T * vr), T - nCommit, this._offset + nCommit);
    this._offset += T;
  }

  private stage(k: Float32Array, v: Float32Array, T: number, pos0: number): void {
    this.staging.reserve(this._staged + T);
    this.staging.write(range(this._staged, this._staged + T), k, v, range(pos0, pos0 + T));
    this._staged += T;
  }

  setCap(cap: number | null): void {
    if (cap !== null && (!Number.isInteger(cap) || cap < this.committed))
      throw new MlxcelError('E_CACHE_CAP', `${this.who}.setCap(${cap}): ${this.committed} rows are already finalized; a cap must be an integer >= ${this.committed}`);
    // Held rows now below the cap become finalized, in order (f32 staging reads back exactly).
    const n = cap === null ? this._staged : Math.max(0, Math.min(this._staged, cap - this.committed));
    if (n > 0) {
      const first = this.committed;
      const { k, v } = this.staging.read(range(0, n));
      const rest = this.staging.exportImage(range(n, this._staged));
      this.commit(k, v, n, first);
      this.staging.clear(0);
      this.staging.importImage(range(0, rest.n), rest);
      this._staged -= n;
    }
    this._cap = cap;
  }

  trim(n: number): number {
    if (!Number.isInteger(n) || n < 0) throw new MlxcelError('E_CACHE_TRIM', `${this.who}.trim: n must be a non-negative integer, got ${n}`);
    const drop = Math.min(n, this._offset);
    const fromMain = Math.max(0, drop - this._staged);
    if (fromMain > 0) {
      // Decide before touching anything: a refused trim leaves the cache exactly as it was.
      const why = this.refuseDrop(fromMain);
      if (why) throw new MlxcelError('E_CACHE_TRIM', `${this.who}.trim(${n}): ${why}`);
    }
    const fromStaging = drop - fromMain;
    this._staged -= fromStaging;
    this.staging.clear(this._staged);
    if (fromMain > 0) this.dropMain(fromMain);
    this._offset -= drop;
    return drop;
  }

  // ---- reads ---------------------------------------------------------------------------------
  segments(): KvSegmentDesc[] {
    const s: KvSegmentDesc[] = [];
    if (this.used > 0) s.push(...this.main.segments(this.used));
    if (this._staged > 0) s.push(this.staging.segment(this._staged));
    return s;
  }

  slotPositions(): Int32Array {
    const main = this.main.positions(this.used);
    if (this._staged === 0) return main;
    const all = new Int32Array(this.used + this._staged);
    all.set(main);
    all.set(this.staging.pos.subarray(0, this._staged), this.used);
    return all;
  }

  attend(q: Float32Array, Tq: number, nHeads: number, qPos: Int32Array, opts: AttendOptions): Float32Array {
    return attendOne(this, q, Tq, nHeads, qPos, opts);
  }

  /**
   * The values attention reads, as f32 rows in slot order (main slots, then held rows): K [n, H, D],
   * V [n, H, DV] (dequantized for quantized storage) and each slot's position. For tests and tools.
   */
  storedRows(): { k: Float32Array; v: Float32Array; pos: Int32Array } {
    const a = this.main.read(range(0, this.used)), b = this.staging.read(range(0, this._staged));
    const cat = (x: Float32Array, y: Float32Array) => {
      const r = new Float32Array(x.length + y.length);
      r.set(x);
      r.set(y, x.length);
      return r;
    };
    return { k: cat(a.k, b.k), v: cat(a.v, b.v), pos: this.slotPositions().slice() };
  }

  // ---- prefix rows (packages/cache prefix-pool.ts) ----------------------------------------------
  /**
   * The exact stored bits of finalized positions [from, to), in position order, or null when this
   * cache does not hold every one of them (a ring that has moved past them, rows held past a cap).
   */
  exportPositions(from: number, to: number): StoreImage | null {
    if (!(Number.isInteger(from) && Number.isInteger(to) && 0 <= from && from <= to))
      throw new MlxcelError('E_CACHE_STATE', `${this.who}.exportPositions: [${from}, ${to}) is not a range of positions`);
    if (to > this.committed) return null;
    const slots = new Int32Array(to - from).fill(-1);
    const pos = this.main.positions(this.used);
    for (let s = 0; s < this.used; s++) {
      const p = pos[s]!;
      if (p >= from && p < to) slots[p - from] = s;
    }
    for (let i = 0; i < slots.length; i++) if (slots[i]! < 0) return null;
    return this.main.exportImage(slots);
  }

  /**
   * The positions `restoreRows(…, n, opts)` takes: it must be given rows from `need` on, and takes any
   * it is given from `from` on (the same for append-only caches; more than the window for a ring, which
   * then has the very slots a fresh ring would have).
   */
  restoreRange(n: number, opts: RestoreOptions = {}): { from: number; need: number } {
    return { from: this.restoreFrom(n, opts), need: this.restoreNeed(n) };
  }

  /**
   * Fills this empty cache with the finalized rows of positions [0, n) (exact bits), given as images of
   * consecutive positions in position order — what `exportPositions` gave, possibly of another cache of
   * the same kind, storage and geometry. It keeps the gap-free run of given positions that ends at n,
   * from `restoreRange(n).from` on, and that run must reach back to `need` (a ring's window). Afterwards
   * the cache is as if those tokens had been written one by one: offset n, no cap, nothing held.
   */
  restoreRows(images: readonly StoreImage[], n: number, opts: RestoreOptions = {}): void {
    const bad = (what: string): never => {
      throw new MlxcelError('E_CACHE_STATE', `${this.who}.restoreRows: ${what}`);
    };
    if (this._offset !== 0 || this._cap !== null) bad(`the cache must be empty and uncapped (it holds ${this._offset} tokens${this._cap !== null ? `, cap ${this._cap}` : ''})`);
    if (!Number.isInteger(n) || n < 0) bad(`n must be a non-negative integer, got ${n}`);
    const { from, need } = this.restoreRange(n, opts);
    // Clip each image to [from, n); keep the run without gaps that ends at n.
    let run: { im: StoreImage; lo: number; hi: number }[] = [];
    let last = -1;
    for (const im of images) {
      if (im.n === 0) continue;
      const p0 = im.pos[0]!;
      for (let i = 1; i < im.n; i++) if (im.pos[i] !== p0 + i) bad(`an image holds positions that are not consecutive (${p0}, …, ${im.pos[i]} at slot ${i})`);
      const lo = Math.max(from, p0, last), hi = Math.min(n, p0 + im.n);
      if (hi <= lo) continue;
      if (last >= 0 && lo !== last) run = []; // a gap: only what follows it can end at n
      run.push({ im, lo, hi });
      last = hi;
    }
    const first = run.length ? run[0]!.lo : n;
    if (n > 0 && last !== n) bad(`positions ${Math.max(last, need)}..${n - 1} are missing from the images`);
    if (first > need) bad(`positions ${need}..${first - 1} are missing from the images`);
    const regime = this.ropeRegime;
    this.reset();
    this.ropeRegime = regime;
    const slotOf = this.prepareRestore(first, n, opts);
    for (const { im, lo, hi } of run) {
      const part = sliceImage(im, lo - im.pos[0]!, hi - im.pos[0]!, this.nKvHeads);
      const slots = new Int32Array(part.n);
      for (let i = 0; i < part.n; i++) slots[i] = slotOf(lo + i);
      this.main.importImage(slots, part);
    }
    this._offset = n;
  }

  // ---- state ---------------------------------------------------------------------------------
  snapshot(): DetachedCache {
    const f = this.format;
    return {
      version: 1, kind: this.kind, storage: f.storage, kBits: f.kBits, vBits: f.vBits, groupSize: f.groupSize,
      nKvHeads: this.nKvHeads, headDim: this.headDim, vDim: this.vDim, window: this.windowSize(),
      offset: this._offset, cap: this._cap, ropeRegime: this.ropeRegime,
      main: copyImage(this.main.exportImage(range(0, this.used))),
      staging: copyImage(this.staging.exportImage(range(0, this._staged))),
      ring: this.ringState(),
    };
  }

  detach(): DetachedCache {
    const s = this.snapshot();
    this.reset();
    return s;
  }

  /**
   * Reserves storage for a sequence of `tokens` positions and faults its pages in now, so the sequence
   * pays no first-touch page faults while it runs (on the development VM those cost ~2.3 ms per MiB
   * even with huge pages: 0.9 s for the 384 MiB Phi-3.5-mini f32 page set). An engine that allocates
   * its context up front (llama.cpp) pays this before any request; `mlxcel bench` calls this, then
   * `reset()`, so the measured sequence reuses the faulted buffers from the recycler. Append-only caches
   * only: a ring's size depends on how the prompt is chunked, and rings are at most a window long.
   * Returns the bytes of storage reserved.
   */
  preallocate(tokens: number): number {
    if (!(Number.isSafeInteger(tokens) && tokens >= 0))
      throw new MlxcelError('E_CACHE', `${this.who}.preallocate: tokens must be a non-negative integer, got ${tokens}`);
    if (!this.reserveFor(tokens)) return 0;
    this.main.touch();
    return this.main.nbytes;
  }

  /** Grows the main store to hold `tokens` positions; false when this kind cannot know its size up front. */
  protected reserveFor(_tokens: number): boolean {
    return false;
  }

  /**
   * Back to a fresh, empty cache (storage format and geometry kept; the regime is forgotten). Its
   * storage buffers go back to the KV buffer recycler: views from `segments()` must not outlive it.
   */
  reset(): void {
    this.main.release();
    this.staging.release();
    this.main = this.newMainStore();
    this.staging = new TiledStore(this.nKvHeads, this.headDim, this.vDim, STAGING_FORMAT);
    this.used = 0;
    this._staged = 0;
    this._offset = 0;
    this._cap = null;
    this.ropeRegime = '';
    this.resetKind();
  }
  protected abstract resetKind(): void;
  protected windowSize(): number {
    return 0;
  }

  adopt(state: DetachedCache): void {
    const f = this.format;
    const bad = (what: string): never => {
      throw new MlxcelError('E_CACHE_ADOPT', `${this.who}.adopt: ${what}`);
    };
    if (!state || state.version !== 1) bad('not a detached cache state (version 1)');
    if (state.kind !== this.kind) bad(`state is a ${state.kind} cache, this is a ${this.kind} cache`);
    if (state.nKvHeads !== this.nKvHeads || state.headDim !== this.headDim || state.vDim !== this.vDim)
      bad(`state is [${state.nKvHeads} KV heads, ${state.headDim}/${state.vDim}], this cache is [${this.nKvHeads}, ${this.headDim}/${this.vDim}]`);
    if (state.storage !== f.storage || state.kBits !== f.kBits || state.vBits !== f.vBits || state.groupSize !== f.groupSize)
      bad(`state stores ${state.storage} (K ${state.kBits}-bit, V ${state.vBits}-bit, group ${state.groupSize}), this cache ${f.storage} (K ${f.kBits}-bit, V ${f.vBits}-bit, group ${f.groupSize})`);
    if (state.window !== this.windowSize()) bad(`state has window ${state.window}, this cache ${this.windowSize()}`);
    if (!Number.isInteger(state.offset) || state.offset < state.main.n + state.staging.n)
      bad(`offset ${state.offset} is smaller than the ${state.main.n + state.staging.n} rows it holds`);
    if (state.cap !== null && !Number.isInteger(state.cap)) bad(`cap ${state.cap} is not an integer`);
    if (typeof state.ropeRegime !== 'string') bad('ropeRegime is not a string');
    this.checkState(state);
    this.reset();
    this.restoreMain(state);
    this.staging.reserve(state.staging.n);
    this.staging.importImage(range(0, state.staging.n), state.staging);
    this._staged = state.staging.n;
    this._offset = state.offset;
    this._cap = state.cap;
    this.ropeRegime = state.ropeRegime;
  }
}
