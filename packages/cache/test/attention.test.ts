/**
 * The attention kernel against a naive float64 reference over the exact values the cache stores:
 * every mask × storage kind × GQA ratio × {prefill, decode}, batches of sequences in one call, and
 * the edge cases (nothing visible, huge scores, long split-K decode, vDim != headDim, bad arguments).
 */
import * as native from '@mlxcel/core-native';
import { describe, expect, it } from 'vitest';
import { attendBatch, ContiguousCache, createLayerCache, KvCacheBase, type AttendOptions, type KvStorage, type LayerCache } from '../src/index.js';
import { naiveAttention, randArray, relErr, rng } from './helpers.js';

const STORAGES: KvStorage[] = ['f32', 'f16', 'bf16', 'q8', 'k8v4'];
const MASKS = ['causal', 'none', 'window', 'spans', 'blockSparse', 'mask', 'softcap'] as const;
type Mask = (typeof MASKS)[number];
const GQA = [1, 2, 8];
const H = 2, D = 64;

/** Fills a cache with `n` random rows in three chunks. */
function filled(storage: KvStorage, n: number, seed: number): LayerCache {
  const c = createLayerCache({ nKvHeads: H, headDim: D }, storage);
  let done = 0;
  for (const f of [0.4, 0.75, 1]) {
    const end = f === 1 ? n : Math.round(n * f), t = end - done;
    if (t <= 0) continue;
    c.update(randArray(t * H * D, seed + done), randArray(t * H * D, seed + done + 7), t);
    done = end;
  }
  return c;
}

function maskOptions(mask: Mask, nHeads: number, qPos: Int32Array, slots: number, seed: number): AttendOptions {
  const base: AttendOptions = { scale: 1 / Math.sqrt(D) };
  switch (mask) {
    case 'causal':
      return base;
    case 'none':
      return { ...base, causal: false };
    case 'window':
      return { ...base, window: 23 };
    case 'spans': {
      const p0 = qPos[0]!;
      return { ...base, spans: Int32Array.of(p0 - 3, p0 + 4, p0 + 9, p0 + 20) };
    }
    case 'blockSparse':
      return { ...base, blockSparse: { blockSize: 4, localBlocks: 3, vertStride: 5, headStep: 1 } };
    case 'mask': {
      const r = rng(seed);
      const m = new Uint8Array(nHeads * qPos.length * slots);
      for (let i = 0; i < m.length; i++) m[i] = r() < 0.7 ? 1 : 0;
      return { ...base, mask: m, maskHeads: nHeads };
    }
    case 'softcap':
      return { scale: 0.6, softcap: 2.5 };
  }
}

function reference(cache: LayerCache, q: Float32Array, Tq: number, nHeads: number, qPos: Int32Array, o: AttendOptions): Float32Array {
  const rows = (cache as KvCacheBase).storedRows();
  return naiveAttention({ q, nQ: Tq, nHeads, headDim: D, vDim: D, qPos, k: rows.k, v: rows.v, kPos: rows.pos, nKvHeads: H, ...o });
}

describe('attention vs naive reference: mask × storage × GQA × {prefill, decode}', () => {
  for (const storage of STORAGES)
    for (const mask of MASKS)
      it(`${storage} ${mask}`, () => {
        for (const g of GQA)
          for (const mode of ['prefill', 'decode'] as const) {
            const nHeads = H * g;
            // prefill: the last 41 of 71 rows query (positions 30..70); decode: one row over 300 keys.
            const n = mode === 'prefill' ? 71 : 300;
            const cache = filled(storage, n, 17 * g + (mode === 'prefill' ? 1 : 2));
            const Tq = mode === 'prefill' ? 41 : 1;
            const qPos = Int32Array.from({ length: Tq }, (_, i) => n - Tq + i - (mask === 'spans' && mode === 'decode' ? 5 : 0));
            const q = randArray(Tq * nHeads * D, 99 + g);
            const o = maskOptions(mask, nHeads, qPos, cache.slotPositions().length, 5 + g);
            const out = cache.attend(q, Tq, nHeads, qPos, o);
            const ref = reference(cache, q, Tq, nHeads, qPos, o);
            const err = relErr(out, ref);
            expect(err, `${storage} ${mask} gqa ${g} ${mode}`).toBeLessThan(3e-5);
          }
      });
});

describe('attention semantics', () => {
  it('block-sparse: lengths not a multiple of the block size, per-head patterns differ within a KV group', () => {
    const cache = filled('f32', 100, 3);
    const nHeads = 8, Tq = 100;
    const qPos = Int32Array.from({ length: Tq }, (_, i) => i);
    const q = randArray(Tq * nHeads * D, 4);
    const o: AttendOptions = { scale: 0.125, blockSparse: { blockSize: 16, localBlocks: 2, vertStride: 4, headStep: 1 } };
    const out = cache.attend(q, Tq, nHeads, qPos, o);
    expect(relErr(out, reference(cache, q, Tq, nHeads, qPos, o))).toBeLessThan(3e-5);
    // Heads 0 and 1 share KV head 0 but see different key blocks past the local window.
    const dense = cache.attend(q, Tq, nHeads, qPos, { scale: 0.125 });
    const row = 99, d0 = (row * nHeads + 0) * D, d1 = (row * nHeads + 1) * D;
    expect(relErr(out.subarray(d0, d0 + D), dense.subarray(d0, d0 + D))).toBeGreaterThan(1e-3);
    expect(relErr(out.subarray(d1, d1 + D), dense.subarray(d1, d1 + D))).toBeGreaterThan(1e-3);
    // Queries inside the local window (< localBlocks * blockSize) equal dense attention.
    for (let i = 0; i < 32; i++)
      expect(relErr(out.subarray(i * nHeads * D, (i + 1) * nHeads * D), dense.subarray(i * nHeads * D, (i + 1) * nHeads * D))).toBeLessThan(1e-6);
  });

  it('a query that sees nothing outputs zeros (window past every key, all-zero mask)', () => {
    const cache = filled('q8', 40, 8);
    const q = randArray(2 * 4 * D, 9);
    const far = cache.attend(q, 2, 4, Int32Array.of(500, 501), { scale: 0.1, window: 10 });
    expect(Array.from(far).every((x) => x === 0)).toBe(true);
    const masked = cache.attend(q, 2, 4, Int32Array.of(39, 39), { scale: 0.1, mask: new Uint8Array(2 * 40), maskHeads: 1 });
    expect(Array.from(masked).every((x) => x === 0)).toBe(true);
  });

  it('online softmax stays finite and exact with huge scores', () => {
    const cache = createLayerCache({ nKvHeads: 1, headDim: D }, 'f32');
    const k = randArray(200 * D, 11, 30), v = randArray(200 * D, 12);
    cache.update(k, v, 200);
    const q = randArray(4 * D, 13, 30);
    const qPos = Int32Array.of(199);
    const o: AttendOptions = { scale: 1 };
    const out = cache.attend(q, 1, 4, qPos, o);
    expect(out.every(Number.isFinite)).toBe(true);
    const ref = naiveAttention({ q, nQ: 1, nHeads: 4, headDim: D, vDim: D, qPos, k, v, kPos: cache.slotPositions(), nKvHeads: 1, ...o });
    expect(relErr(out, ref)).toBeLessThan(1e-5);
  });

  it('split-K decode over a long cache merges partials exactly (one KV head, 6000 keys)', () => {
    for (const storage of ['f16', 'k8v4'] as const) {
      const cache = createLayerCache({ nKvHeads: 1, headDim: 128 }, storage);
      cache.update(randArray(6000 * 128, 21), randArray(6000 * 128, 22), 6000);
      const q = randArray(8 * 128, 23);
      const qPos = Int32Array.of(5999);
      for (const o of [{ scale: 0.09 }, { scale: 0.09, window: 4000 }] as AttendOptions[]) {
        const out = cache.attend(q, 1, 8, qPos, o);
        const rows = (cache as KvCacheBase).storedRows();
        const ref = naiveAttention({ q, nQ: 1, nHeads: 8, headDim: 128, vDim: 128, qPos, k: rows.k, v: rows.v, kPos: rows.pos, nKvHeads: 1, ...o });
        expect(relErr(out, ref), storage).toBeLessThan(3e-5);
      }
    }
  });

  it('vDim different from headDim, every storage', () => {
    for (const storage of STORAGES) {
      const cache = createLayerCache({ nKvHeads: 2, headDim: 64, vDim: 32 }, storage);
      cache.update(randArray(50 * 2 * 64, 31), randArray(50 * 2 * 32, 32), 50);
      const q = randArray(10 * 4 * 64, 33);
      const qPos = Int32Array.from({ length: 10 }, (_, i) => 40 + i);
      const out = cache.attend(q, 10, 4, qPos, { scale: 0.125 });
      const rows = (cache as KvCacheBase).storedRows();
      const ref = naiveAttention({ q, nQ: 10, nHeads: 4, headDim: 64, vDim: 32, qPos, k: rows.k, v: rows.v, kPos: rows.pos, nKvHeads: 2, scale: 0.125 });
      expect(out.length).toBe(10 * 4 * 32);
      expect(relErr(out, ref), storage).toBeLessThan(3e-5);
    }
  });

  it('a batch of sequences with different lengths, offsets, storages and masks in one call', () => {
    const caches = [filled('f16', 90, 41), filled('q8', 17, 42), filled('k8v4', 260, 43), filled('f32', 5, 44)];
    const rowsPer = [7, 1, 1, 5];
    const nHeads = 8;
    const total = rowsPer.reduce((a, b) => a + b, 0);
    const q = randArray(total * nHeads * D, 45);
    const items = caches.map((cache, i) => {
      const n = cache.offset, T = rowsPer[i]!;
      return { cache, rows: T, qPos: Int32Array.from({ length: T }, (_, t) => n - T + t), ...(i === 3 ? { spans: Int32Array.of(0, 5) } : {}) };
    });
    const opts = { scale: 0.125, window: 64 };
    const out = attendBatch(q, items, nHeads, opts);
    let r = 0;
    items.forEach((it, i) => {
      const qs = q.subarray(r * nHeads * D, (r + it.rows) * nHeads * D);
      const got = out.subarray(r * nHeads * D, (r + it.rows) * nHeads * D);
      const o = { ...opts, ...(it.spans ? { spans: it.spans } : {}) };
      expect(relErr(got, reference(it.cache, qs, it.rows, nHeads, it.qPos, o)), `seq ${i}`).toBeLessThan(3e-5);
      expect(relErr(got, it.cache.attend(qs, it.rows, nHeads, it.qPos, o)), `seq ${i} alone`).toBeLessThan(1e-6);
      r += it.rows;
    });
  });

  it('the single-sequence row-layout API (legacy form) still works, with masks', () => {
    const nKv = 37, nQ = 9, nHeads = 6, kvh = 3;
    const k = randArray(nKv * kvh * 40, 51), v = randArray(nKv * kvh * 40, 52), q = randArray(nQ * nHeads * 40, 53);
    const kPos = Int32Array.from({ length: nKv }, (_, i) => (i === 5 ? -1 : i));
    const qPos = Int32Array.from({ length: nQ }, (_, i) => 28 + i);
    const mask = new Uint8Array(nHeads * nQ * nKv).map((_, i) => (i % 7 ? 1 : 0));
    for (const kvDtype of [0, 1, 2] as const) {
      let kb: ArrayBufferView = k, vb: ArrayBufferView = v, kr = k, vr = v;
      if (kvDtype) {
        const k16 = new Uint16Array(k.length), v16 = new Uint16Array(v.length);
        native.fromF32(k, kvDtype, k16);
        native.fromF32(v, kvDtype, v16);
        kb = k16;
        vb = v16;
        kr = new Float32Array(k.length);
        vr = new Float32Array(v.length);
        native.toF32(k16, kvDtype, k.length, kr);
        native.toF32(v16, kvDtype, v.length, vr);
      }
      const out = new Float32Array(nQ * nHeads * 40);
      native.attention({ q, nQ, nHeads, headDim: 40, qPos, k: kb, v: vb, kvDtype, nKv, nKvHeads: kvh, kPos, scale: 0.2, window: 20, mask, maskHeads: nHeads, softcap: 3, out });
      const ref = naiveAttention({ q, nQ, nHeads, headDim: 40, vDim: 40, qPos, k: kr, v: vr, kPos, nKvHeads: kvh, scale: 0.2, window: 20, mask, maskHeads: nHeads, softcap: 3 });
      expect(relErr(out, ref), `dtype ${kvDtype}`).toBeLessThan(3e-5);
    }
  });
});

describe('attention argument checks', () => {
  const cache = filled('f16', 20, 61);
  it('rejects bad shapes with MlxcelError codes', () => {
    const q = randArray(4 * D, 62);
    expect(() => cache.attend(q, 1, 3, Int32Array.of(19), { scale: 1 })).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
    expect(() => cache.attend(q, 2, 4, Int32Array.of(19, 19), { scale: 1 })).toThrow(/q has/);
    expect(() => cache.attend(q, 1, 4, new Int32Array(0), { scale: 1 })).toThrow(/qPos/);
    expect(() => cache.attend(q, 1, 4, Int32Array.of(19), { scale: 1, mask: new Uint8Array(3) })).toThrow(/mask has 3 entries/);
    expect(() => cache.attend(q, 1, 4, Int32Array.of(19), { scale: Number.NaN })).toThrow(/scale/);
    expect(() => cache.attend(q, 1, 4, Int32Array.of(19), { scale: 1, blockSparse: { blockSize: 0, localBlocks: 1, vertStride: 1 } })).toThrow(/blockSize/);
    expect(() => cache.attend(q, 1, 4, Int32Array.of(19), { scale: 1, spans: Int32Array.of(3) })).toThrow(/pairs/);
    const other = createLayerCache({ nKvHeads: 1, headDim: D }, 'f32');
    other.update(randArray(D, 1), randArray(D, 2), 1);
    expect(() => attendBatch(q, [{ cache, rows: 1, qPos: Int32Array.of(19) }, { cache: other, rows: 0, qPos: new Int32Array(0) }], 4, { scale: 1 })).toThrow(/item 1's cache/);
  });

  it('native validation throws JS errors instead of crashing', () => {
    const seg = cache.segments()[0]!;
    const base = { q: randArray(2 * 4 * D, 63), qPos: Int32Array.of(19, 19), out: new Float32Array(2 * 4 * D), nHeads: 4, headDim: D, nKvHeads: H, scale: 1 };
    expect(() => native.attention({ ...base, seqs: [{ qStart: 0, nQ: 2, segments: [seg] }, { qStart: 1, nQ: 1, segments: [seg] }] })).toThrow(/overlap/);
    expect(() => native.attention({ ...base, seqs: [{ qStart: 0, nQ: 3, segments: [seg] }] })).toThrow(/q has/);
    expect(() => native.attention({ ...base, seqs: [{ qStart: 0, nQ: 1, segments: [{ ...seg, capacity: 8 }] }] })).toThrow(/capacity/);
    expect(() => native.attention({ ...base, seqs: [{ qStart: 0, nQ: 1, segments: [{ ...seg, k: new Uint8Array(10) }] }] })).toThrow(/needs/);
    expect(() => native.attention({ ...base, seqs: [{ qStart: 0, nQ: 1, segments: [{ ...seg, dtype: 3, layout: 0 }] }] })).toThrow(/tile layout/);
    expect(() => native.attention({ ...base, seqs: [{ qStart: 0, nQ: 1, segments: [seg], spans: Int32Array.of(5, 2) }] })).toThrow(/not a range/);
    expect(() => native.attention({ ...base, qPos: Int32Array.of(-1, 0), blockSparse: { blockSize: 4, localBlocks: 1, vertStride: 2 }, seqs: [{ qStart: 0, nQ: 1, segments: [seg] }] })).toThrow(/negative/);
    expect(() => native.attention({ ...base, nHeads: 3, seqs: [] })).toThrow(/multiple/);
  });
});

describe('decode with few query vectors per KV head', () => {
  it('batched multi-head decode (one query head per KV head, several KV heads per kernel call) equals each sequence\'s row of a two-row call bit for bit: 16-bit and f32 storage, head counts not a multiple of the group, a partly filled last tile', () => {
    const prev = native.cpuInfo().threads;
    native.setThreads(1); // no split-K: only the micro-kernels differ
    try {
      const D = 96, o = { scale: 1 / Math.sqrt(D), causal: true, softcap: 30 };
      for (const storage of ['f16', 'bf16', 'f32'] as const)
        for (const nKv of [5, 6, 30]) {
          // Two sequences, 203 and 150 tokens (12 full tiles + 11 slots; 9 + 6).
          const seqs = [203, 150].map((T, i) => {
            const cache = createLayerCache({ nKvHeads: nKv, headDim: D }, storage);
            cache.update(randArray(T * nKv * D, 5 + i), randArray(T * nKv * D, 6 + i), T);
            return { cache, T, q: randArray(2 * nKv * D, 7 + nKv + i), qPos: Int32Array.of(T - 2, T - 1) };
          });
          // One decode row per sequence in one call: the multi-head units. Each sequence's two rows
          // alone: one KV head's tiles shared by two query vectors (the one-head few-row kernels).
          const qs = new Float32Array(2 * nKv * D);
          seqs.forEach((sq, i) => qs.set(sq.q.subarray(nKv * D), i * nKv * D));
          const batched = attendBatch(qs, seqs.map((sq) => ({ cache: sq.cache, rows: 1, qPos: sq.qPos.subarray(1) })), nKv, o);
          seqs.forEach((sq, i) => {
            const both = attendBatch(sq.q, [{ cache: sq.cache, rows: 2, qPos: sq.qPos }], nKv, o);
            const got = batched.subarray(i * nKv * D, (i + 1) * nKv * D);
            expect(got, `${storage}, ${nKv} heads, sequence ${i}`).toEqual(both.subarray(nKv * D));
            const rows = (sq.cache as KvCacheBase).storedRows();
            const ref = naiveAttention({ q: sq.q.subarray(nKv * D), nQ: 1, nHeads: nKv, headDim: D, vDim: D, qPos: sq.qPos.subarray(1), k: rows.k, v: rows.v, kPos: rows.pos, nKvHeads: nKv, ...o });
            expect(relErr(got, ref), `${storage}, ${nKv} heads, sequence ${i} vs naive`).toBeLessThan(3e-5);
          });
        }
    } finally {
      native.setThreads(prev);
    }
  });

  it('equals the same row of a multi-row call bit for bit (f32 tiles: the few-row kernels vs the padded ones)', () => {
    const prev = native.cpuInfo().threads;
    native.setThreads(1); // no split-K in either call: one task per unit, so only the micro-kernels differ
    try {
      const D = 96, T = 300;
      for (const [nHeads, nKv] of [[8, 8], [16, 8], [32, 8]] as const) { // 1, 2 and 4 query vectors per unit
        const cache = new ContiguousCache(nKv, D);
        cache.update(randArray(T * nKv * D, 1), randArray(T * nKv * D, 2), T);
        const rows = 8;
        const q = randArray(rows * nHeads * D, 3 + nHeads);
        const qPos = Int32Array.from({ length: rows }, (_, i) => T - rows + i);
        const all = attendBatch(q, [{ cache, rows, qPos }], nHeads, { scale: 1 / Math.sqrt(D), causal: true });
        const last = q.subarray((rows - 1) * nHeads * D);
        const one = attendBatch(last, [{ cache, rows: 1, qPos: qPos.subarray(rows - 1) }], nHeads, { scale: 1 / Math.sqrt(D), causal: true });
        expect(one, `${nHeads} heads / ${nKv} KV heads`).toEqual(all.subarray((rows - 1) * nHeads * D));
      }
    } finally {
      native.setThreads(prev);
    }
  });
});
