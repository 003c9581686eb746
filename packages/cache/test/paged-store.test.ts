import { describe, expect, it } from 'vitest';
import {
  ContiguousCache, KV_STORAGES, PagedStore, PAGE_SLOTS, QuantizedCache, RotatingCache, TiledStore, attendBatch,
  concatImages, kvBuffers, pageSlotsFor, sliceImage, storeFormat, type KvStorage,
} from '../src/index.js';
import { randArray } from './helpers.js';

const H = 2, D = 32;
const range = (a: number, b: number) => Int32Array.from({ length: b - a }, (_, i) => a + i);

describe('PagedStore', () => {
  it('sizes pages to fill whole 2 MiB huge pages where its buffers are that large', () => {
    // Phi-3.5-mini f32: 32 KV heads x 96 x 4 B = 12 KiB per slot and buffer: 256 slots = 3 MiB, 512 = 6 MiB.
    expect(pageSlotsFor(storeFormat('f32', 96, 96), 32, 96, 96)).toBe(512);
    // Small rows: ordinary buffers, the default page.
    expect(pageSlotsFor(storeFormat('f32', 256, 256), 2, 256, 256)).toBe(PAGE_SLOTS);
    expect(() => new PagedStore(H, D, D, storeFormat('f32', D, D), 40)).toThrow(/multiple of 16/);
  });

  it('growing adds pages and never moves stored rows', () => {
    const s = new PagedStore(H, D, D, storeFormat('f32', D, D), 64);
    s.reserve(64);
    const k = randArray(64 * H * D, 1), v = randArray(64 * H * D, 2);
    s.write(range(0, 64), k, v, range(0, 64));
    const first = s.segments(64)[0]!.k;
    s.reserve(200);
    expect(s.capacity).toBe(256);
    expect(s.segments(64)[0]!.k).toBe(first); // same buffer: nothing copied
    expect(s.read(range(0, 64)).k).toEqual(k);
  });

  it('writes, reads, exports and imports rows across page boundaries (every storage)', () => {
    for (const storage of KV_STORAGES as readonly KvStorage[]) {
      const f = storeFormat(storage, D, D);
      const paged = new PagedStore(H, D, D, f, 32), flat = new TiledStore(H, D, D, f);
      paged.reserve(100);
      flat.reserve(100);
      const T = 90, k = randArray(T * H * D, 3), v = randArray(T * H * D, 4);
      // Slots out of order and across pages (as a caller may choose them).
      const slots = Int32Array.from({ length: T }, (_, i) => (i * 37) % 96);
      paged.write(slots, k, v, range(0, T));
      flat.write(slots, k, v, range(0, T));
      expect(paged.read(slots), storage).toEqual(flat.read(slots));
      const sel = range(10, 80);
      const im = paged.exportImage(sel);
      expect(im, storage).toEqual(flat.exportImage(sel));
      const other = new PagedStore(H, D, D, f, 16);
      other.reserve(70);
      other.importImage(range(0, 70), im);
      expect(other.exportImage(range(0, 70)), storage).toEqual(im);
      expect(other.positions(70)).toEqual(im.pos);
      other.clear(20, 50);
      expect(Array.from(other.positions(70).subarray(18, 52)).filter((p) => p < 0).length).toBe(30);
    }
  });

  it('concatImages is the inverse of sliceImage', () => {
    const f = storeFormat('q8', D, D);
    const s = new TiledStore(H, D, D, f);
    s.reserve(48);
    s.write(range(0, 48), randArray(48 * H * D, 5), randArray(48 * H * D, 6), range(100, 148));
    const im = s.exportImage(range(0, 48));
    expect(concatImages([sliceImage(im, 0, 5, H), sliceImage(im, 5, 5, H), sliceImage(im, 5, 48, H)], H)).toEqual(im);
  });

  it('refuses slots outside the store', () => {
    const s = new PagedStore(H, D, D, storeFormat('f32', D, D), 16);
    s.reserve(16);
    expect(() => s.write(Int32Array.of(16), new Float32Array(H * D), new Float32Array(H * D), Int32Array.of(0))).toThrow(/slot 16 is outside its 16 slots/);
  });
});

describe('append caches on pages', () => {
  it('attention over a multi-page cache equals attention over one contiguous store, bit for bit', () => {
    // A ring whose window holds everything keeps all rows in one TiledStore: the single-segment reference.
    const nHeads = 4, T = 700, scale = 1 / Math.sqrt(D);
    for (const storage of ['f32', 'bf16', 'q8'] as const) {
      const paged = storage === 'q8' ? new QuantizedCache(H, D) : new ContiguousCache(H, D, D, { dtype: storage });
      const flat = new RotatingCache(H, D, 1 << 20, D, { dtype: storage });
      // Prefill in uneven chunks, then decode steps, as generation does.
      let at = 0;
      for (const n of [300, 213, 150, 1, 1, 35]) {
        const k = randArray(n * H * D, 10 + at), v = randArray(n * H * D, 20 + at);
        paged.update(k, v, n);
        flat.update(k, v, n);
        at += n;
      }
      expect(at).toBe(T);
      expect(paged.segments().length).toBeGreaterThan(1);
      expect(flat.segments().length).toBe(1);
      for (const nQ of [1, 5]) {
        const q = randArray(nQ * nHeads * D, 99 + nQ);
        const qPos = range(T - nQ, T);
        const a = attendBatch(q, [{ cache: paged, rows: nQ, qPos }], nHeads, { scale, causal: true });
        const b = attendBatch(q, [{ cache: flat, rows: nQ, qPos }], nHeads, { scale, causal: true });
        expect(a, `${storage} nQ=${nQ}`).toEqual(b);
      }
    }
  });

  it('trim, snapshot/adopt and prefix export work across pages', () => {
    const c = new ContiguousCache(H, D);
    const k = randArray(600 * H * D, 7), v = randArray(600 * H * D, 8);
    c.update(k, v, 600);
    expect(c.trim(100)).toBe(100); // back across the page boundary at 512 or 256
    const s = c.snapshot();
    expect(s.main.n).toBe(500);
    const d = new ContiguousCache(H, D);
    d.adopt(s);
    expect(d.storedRows()).toEqual(c.storedRows());
    const part = c.exportPositions(200, 300)!;
    expect(part.pos).toEqual(range(200, 300));
    expect(part.k).toEqual(sliceImage(c.exportPositions(0, 500)!, 200, 300, H).k);
    const e = new ContiguousCache(H, D);
    e.restoreRows([c.exportPositions(0, 256)!, c.exportPositions(256, 500)!], 500);
    expect(e.storedRows()).toEqual(c.storedRows());
  });

  it('large KV buffers are zeroed native mappings, recycled by size', () => {
    const a = kvBuffers.u8(3 << 20);
    expect(a.length).toBe(3 << 20);
    expect(a.every((x) => x === 0)).toBe(true);
    a.fill(7);
    kvBuffers.give(a);
    const b = kvBuffers.u8(3 << 20);
    expect(b.every((x) => x === 0)).toBe(true);
  });
});
