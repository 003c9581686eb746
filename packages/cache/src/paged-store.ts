/**
 * The main store of an append-only cache: pages of a fixed number of slots, each page one TiledStore.
 * Growing adds a page and never moves what is stored. Why: a single TiledStore grows by copying every
 * head's block into a larger buffer, so a long generation copies its whole cache again every 256
 * tokens (O(n²) bytes over the sequence) and touches a fresh, larger buffer each time; on
 * Phi-3.5-mini (32 layers, f32 KV, 786 KB per token) a CPU profile of 32 tokens decoded after a
 * 256-token prompt put 20 % of the samples there.
 *
 * Attention reads one segment per page. A page holds a whole number of 16-slot tiles, and the kernel
 * walks the tiles of all segments as one list, so it sees exactly the tiles — and does exactly the
 * arithmetic — it would over one contiguous store (tested: packages/cache/test/paged-store.test.ts).
 */
import type { KvSegmentDesc } from '@mlxcel/core-native';
import { MlxcelError } from '@mlxcel/tensor';
import type { StoreFormat } from './storage.js';
import { concatImages, sliceImage, TILE, TiledStore, type KvStore, type StoreImage } from './store.js';

/** Slots per page unless a larger page wastes less of the 2 MiB huge pages its buffers are mapped in. */
export const PAGE_SLOTS = 256;
const HUGE = 2 << 20;

/**
 * Slots per page for a format: 256, or 512 / 768 / 1024 when the page's K and V buffers (multi-MiB,
 * mapped in 2 MiB huge pages, see store.ts `fresh`) then fill their last huge page better. Phi-3.5-mini
 * f32: 256 slots = 3 MiB per buffer (a 4 MiB mapping), 512 slots = exactly 6 MiB.
 */
export function pageSlotsFor(format: StoreFormat, nKvHeads: number, headDim: number, vDim: number): number {
  const buffers = [(nKvHeads * headDim * format.kBits) / 8, (nKvHeads * vDim * format.vBits) / 8]; // bytes per slot
  let best = PAGE_SLOTS, bestWaste = Infinity;
  for (let k = 1; k <= 4; k++) {
    const slots = k * PAGE_SLOTS;
    let waste = 0, any = false;
    for (const b of buffers) {
      const bytes = b * slots;
      if (bytes < HUGE) continue; // an ordinary buffer: no huge page to fill
      any = true;
      waste += (Math.ceil(bytes / HUGE) * HUGE - bytes) / bytes;
    }
    if (!any) return PAGE_SLOTS;
    if (waste < bestWaste - 1e-9) {
      best = slots;
      bestWaste = waste;
    }
  }
  return best;
}

export class PagedStore implements KvStore {
  private pages: TiledStore[] = [];
  private readonly template: TiledStore;
  readonly pageSlots: number;

  constructor(
    readonly nKvHeads: number,
    readonly headDim: number,
    readonly vDim: number,
    readonly format: StoreFormat,
    pageSlots: number = pageSlotsFor(format, nKvHeads, headDim, vDim),
  ) {
    if (!Number.isInteger(pageSlots) || pageSlots < TILE || pageSlots % TILE !== 0)
      throw new MlxcelError('E_CACHE_STORAGE', `paged KV store: page size must be a positive multiple of ${TILE} slots, got ${pageSlots}`);
    this.pageSlots = pageSlots;
    this.template = new TiledStore(nKvHeads, headDim, vDim, format);
  }

  get capacity(): number {
    return this.pages.length * this.pageSlots;
  }

  get nbytes(): number {
    return this.pages.reduce((s, p) => s + p.nbytes, 0);
  }

  /** Pages in use (one attention segment each). */
  get pageCount(): number {
    return this.pages.length;
  }

  reserve(slots: number): void {
    while (this.capacity < slots) {
      const page = new TiledStore(this.nKvHeads, this.headDim, this.vDim, this.format);
      page.reserve(this.pageSlots);
      this.pages.push(page);
    }
  }

  /** Consecutive runs of `slots` that fall in one page: [page, first index, end index). */
  private runs(slots: Int32Array, what: string): [number, number, number][] {
    const P = this.pageSlots, cap = this.capacity;
    const out: [number, number, number][] = [];
    let i0 = 0;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i]!;
      if (!(Number.isInteger(s) && s >= 0 && s < cap))
        throw new MlxcelError('E_CACHE_STATE', `paged KV store ${what}: slot ${s} is outside its ${cap} slots`);
      if (i > 0 && Math.floor(s / P) !== Math.floor(slots[i0]! / P)) {
        out.push([Math.floor(slots[i0]! / P), i0, i]);
        i0 = i;
      }
    }
    if (slots.length) out.push([Math.floor(slots[i0]! / P), i0, slots.length]);
    return out;
  }

  private local(slots: Int32Array, page: number, i0: number, i1: number): Int32Array {
    const r = slots.slice(i0, i1);
    const base = page * this.pageSlots;
    for (let i = 0; i < r.length; i++) r[i] = r[i]! - base;
    return r;
  }

  write(slots: Int32Array, k: Float32Array, v: Float32Array, positions: Int32Array): void {
    const kr = this.nKvHeads * this.headDim, vr = this.nKvHeads * this.vDim;
    for (const [p, i0, i1] of this.runs(slots, 'write'))
      this.pages[p]!.write(this.local(slots, p, i0, i1), k.subarray(i0 * kr, i1 * kr), v.subarray(i0 * vr, i1 * vr), positions.subarray(i0, i1));
  }

  read(slots: Int32Array): { k: Float32Array; v: Float32Array } {
    const kr = this.nKvHeads * this.headDim, vr = this.nKvHeads * this.vDim;
    const k = new Float32Array(slots.length * kr), v = new Float32Array(slots.length * vr);
    for (const [p, i0, i1] of this.runs(slots, 'read')) {
      const part = this.pages[p]!.read(this.local(slots, p, i0, i1));
      k.set(part.k, i0 * kr);
      v.set(part.v, i0 * vr);
    }
    return { k, v };
  }

  exportImage(slots: Int32Array): StoreImage {
    const runs = this.runs(slots, 'export');
    const parts = runs.map(([p, i0, i1]) => this.pages[p]!.exportImage(this.local(slots, p, i0, i1)));
    if (parts.length === 1) return parts[0]!;
    return parts.length ? concatImages(parts, this.nKvHeads) : this.emptyImage(0);
  }

  importImage(slots: Int32Array, im: StoreImage): void {
    if (im.n !== slots.length) throw new MlxcelError('E_CACHE_STATE', `store image holds ${im.n} slots, ${slots.length} given`);
    const runs = this.runs(slots, 'import');
    for (const [p, i0, i1] of runs)
      this.pages[p]!.importImage(this.local(slots, p, i0, i1), runs.length === 1 ? im : sliceImage(im, i0, i1, this.nKvHeads));
  }

  emptyImage(n: number): StoreImage {
    return this.template.emptyImage(n);
  }

  clear(from: number, to: number = this.capacity): void {
    const P = this.pageSlots;
    this.pages.forEach((page, i) => {
      const a = Math.max(from, i * P), b = Math.min(to, (i + 1) * P);
      if (a < b) page.clear(a - i * P, b - i * P);
    });
  }

  touch(): void {
    for (const p of this.pages) p.touch();
  }

  release(): void {
    for (const p of this.pages) p.release();
    this.pages = [];
  }

  segments(n: number): KvSegmentDesc[] {
    const out: KvSegmentDesc[] = [];
    for (let i = 0; n > 0 && i < this.pages.length; i++, n -= this.pageSlots) out.push(this.pages[i]!.segment(Math.min(n, this.pageSlots)));
    return out;
  }

  positions(n: number): Int32Array {
    const out = new Int32Array(Math.min(n, this.capacity));
    for (let i = 0; i * this.pageSlots < out.length; i++)
      out.set(this.pages[i]!.pos.subarray(0, Math.min(this.pageSlots, out.length - i * this.pageSlots)), i * this.pageSlots);
    return out;
  }
}
