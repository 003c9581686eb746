/**
 * Cache kinds: incremental (token by token, and in chunks) == one-shot for every kind, rotating ==
 * contiguous under a sliding mask, shared layers, the factory, and argument checks.
 */
import { describe, expect, it } from 'vitest';
import {
  ContiguousCache, createLayerCache, kvBytesReadPerStep, QuantizedCache, RotatingCache, SharedCache, type KvStorage, type LayerCache,
} from '../src/index.js';
import { bitsEqual, randArray, relErr } from './helpers.js';

const H = 2, D = 64, NH = 8;
const T = 150;
const K = randArray(T * H * D, 1), V = randArray(T * H * D, 2), Q = randArray(T * NH * D, 3);
const kRows = (a: number, b: number) => K.subarray(a * H * D, b * H * D);
const vRows = (a: number, b: number) => V.subarray(a * H * D, b * H * D);
const qRows = (a: number, b: number) => Q.subarray(a * NH * D, b * NH * D);
const positions = (a: number, b: number) => Int32Array.from({ length: b - a }, (_, i) => a + i);

/** Feeds T tokens in the given chunk sizes, attending each chunk's queries; returns all outputs. */
function feed(cache: LayerCache, chunks: number[], window = 0): Float32Array {
  const out = new Float32Array(T * NH * D);
  let p = 0;
  for (const n of chunks) {
    cache.update(kRows(p, p + n), vRows(p, p + n), n);
    out.set(cache.attend(qRows(p, p + n), n, NH, positions(p, p + n), { scale: 0.125, window }), p * NH * D);
    p += n;
  }
  expect(p).toBe(T);
  return out;
}

const KINDS: [string, () => LayerCache, number][] = [
  ['contiguous f32', () => new ContiguousCache(H, D), 0],
  ['contiguous f16', () => new ContiguousCache(H, D, D, { dtype: 'f16' }), 0],
  ['contiguous bf16', () => new ContiguousCache(H, D, D, { dtype: 'bf16' }), 0],
  ['quantized q8', () => new QuantizedCache(H, D), 0],
  ['quantized k8v4', () => new QuantizedCache(H, D, D, { vBits: 4 }), 0],
  ['rotating f32 (window 40)', () => new RotatingCache(H, D, 40), 40],
  ['rotating f16 (window 33)', () => new RotatingCache(H, D, 33, D, { dtype: 'f16' }), 33],
  ['rotating k8v4 (window 50)', () => new RotatingCache(H, D, 50, D, { dtype: 'k8v4' }), 50],
];

describe('kvBytesReadPerStep', () => {
  it('counts the positions each layer attends, in its storage; a ring at most its window; a shared layer its owner again', () => {
    const full = new ContiguousCache(H, D); // f32: 2 * H * D * 4 bytes per position
    const half = new ContiguousCache(H, D, D, { dtype: 'f16' });
    const ring = new RotatingCache(H, D, 40, D, { dtype: 'f16' });
    const shared = new SharedCache(ring);
    const per32 = 2 * H * D * 4, per16 = 2 * H * D * 2;
    expect(kvBytesReadPerStep([full], 100)).toBe(100 * per32);
    expect(kvBytesReadPerStep([half], 100)).toBe(100 * per16);
    expect(kvBytesReadPerStep([ring], 30)).toBe(30 * per16);
    expect(kvBytesReadPerStep([ring], 100)).toBe(40 * per16);
    expect(kvBytesReadPerStep([full, ring, shared], 100)).toBe(100 * per32 + 2 * 40 * per16);
    expect(kvBytesReadPerStep([new QuantizedCache(H, D)], 10)).toBeGreaterThan(0);
    expect(kvBytesReadPerStep([], 10)).toBe(0);
  });
});

describe('preallocate', () => {
  for (const [name, make, window] of KINDS)
    it(`${name}: reserves and faults in storage up front; outputs are unchanged, before and after tokens`, () => {
      const ref = feed(make(), [T], window);
      const pre = make() as LayerCache & { preallocate(n: number): number; nbytes: number };
      const bytes = pre.preallocate(2 * T);
      if (window) expect(bytes).toBe(0); // a ring's size depends on the chunking: nothing up front
      else {
        expect(bytes).toBeGreaterThan(0);
        expect(pre.nbytes).toBe(bytes);
      }
      const half = make() as LayerCache & { preallocate(n: number): number };
      half.update(kRows(0, 40), vRows(0, 40), 40);
      const before = half.attend(qRows(0, 40), 40, NH, positions(0, 40), { scale: 0.125, window });
      half.preallocate(3 * T); // with content: every stored value stays
      expect(bitsEqual(half.attend(qRows(0, 40), 40, NH, positions(0, 40), { scale: 0.125, window }), before)).toBe(true);
      expect(bitsEqual(feed(pre, [T], window), ref)).toBe(true);
      expect(() => pre.preallocate(-1)).toThrow(/preallocate: tokens must be a non-negative integer/);
    });
});

describe('incremental == one-shot', () => {
  for (const [name, make, window] of KINDS)
    it(name, () => {
      const oneShot = make();
      const ref = feed(oneShot, [T], window);
      const tokenByToken = make();
      const inc = feed(tokenByToken, Array(T).fill(1), window);
      expect(relErr(inc, ref)).toBeLessThan(1e-5);
      const chunked = make();
      expect(relErr(feed(chunked, [7, 30, 1, 64, 48], window), ref)).toBeLessThan(1e-5);
      // The stored state is identical bit for bit (append-only kinds keep slot i = position i).
      if (!window) {
        const a = oneShot.snapshot(), b = tokenByToken.snapshot();
        for (const key of ['k', 'v', 'kScales', 'kBiases', 'vScales', 'vBiases'] as const)
          if (a.main[key]) expect(bitsEqual(a.main[key]!, b.main[key]!), key).toBe(true);
      }
      expect(tokenByToken.offset).toBe(T);
    });
});

describe('rotating cache == contiguous cache with a sliding-window mask', () => {
  for (const storage of ['f32', 'f16', 'q8'] as KvStorage[])
    for (const window of [1, 16, 37])
      it(`${storage}, window ${window}, chunks longer and shorter than the window`, () => {
        const rot = new RotatingCache(H, D, window, D, { dtype: storage });
        const full = createLayerCache({ nKvHeads: H, headDim: D }, storage === 'q8' ? 'q8' : storage);
        const chunks = [3, 60, 1, 1, 20, 5, 45, 15];
        expect(relErr(feed(rot, chunks, window), feed(full, chunks, window))).toBeLessThan(1e-5);
        // Memory stays bounded by the window plus the largest chunk, not the sequence.
        expect(rot.slotPositions().length).toBeLessThanOrEqual(Math.ceil((window - 1 + 60) / 256) * 256);
        const pos = Array.from(rot.slotPositions()).filter((p) => p >= 0);
        expect(Math.max(...pos)).toBe(T - 1);
        expect(Math.min(...pos)).toBeLessThanOrEqual(T - window);
      });
});

describe('shared cache', () => {
  it('reads its owner, writes nothing, reports the owner state', () => {
    const owner = new QuantizedCache(H, D, D, { vBits: 4 });
    owner.update(kRows(0, 30), vRows(0, 30), 30);
    owner.ropeRegime = 'default:h=abc';
    const shared = new SharedCache(owner);
    const q = qRows(0, 3), qPos = positions(27, 30);
    expect(bitsEqual(shared.attend(q, 3, NH, qPos, { scale: 0.1 }), owner.attend(q, 3, NH, qPos, { scale: 0.1 }))).toBe(true);
    expect([shared.offset, shared.storage, shared.nbytes, shared.ropeRegime]).toEqual([30, 'k8v4', 0, 'default:h=abc']);
    expect(() => shared.update()).toThrow(/must not write/);
    expect(() => {
      shared.ropeRegime = 'x';
    }).toThrow(/owner/);
    expect(shared.trim()).toBe(0);
    expect(owner.offset).toBe(30);
    expect(shared.snapshot().kind).toBe('shared');
    expect(() => shared.adopt(owner.snapshot())).toThrow(/quantized cache, this is a shared cache/);
    expect(() => new SharedCache({} as LayerCache)).toThrow(/owner/);
  });
});

describe('factory and argument checks', () => {
  it('createLayerCache picks the kind from the window and the storage', () => {
    expect(createLayerCache({ nKvHeads: 1, headDim: 64 }).kind).toBe('contiguous');
    expect(createLayerCache({ nKvHeads: 1, headDim: 64 }, 'bf16').storage).toBe('bf16');
    const q = createLayerCache({ nKvHeads: 1, headDim: 64 }, 'k8v4');
    expect([q.kind, q.storage, q.snapshot().vBits, q.snapshot().groupSize]).toEqual(['quantized', 'k8v4', 4, 64]);
    const r = createLayerCache({ nKvHeads: 1, headDim: 96, window: 512 }, 'q8');
    expect([r.kind, r.storage, r.snapshot().groupSize, r.snapshot().window]).toEqual(['rotating', 'q8', 32, 512]);
    expect(() => createLayerCache({ nKvHeads: 1, headDim: 64 }, 'q3')).toThrow(expect.objectContaining({ code: 'E_CACHE_STORAGE' }));
  });

  it('constructors and update reject bad arguments', () => {
    expect(() => new ContiguousCache(0, 64)).toThrow(/nKvHeads must be a positive integer/);
    expect(() => new ContiguousCache(1, 64, 64, { dtype: 'q8' as 'f16' })).toThrow(/QuantizedCache/);
    expect(() => new RotatingCache(1, 64, 0)).toThrow(/window/);
    expect(() => new QuantizedCache(1, 48)).toThrow(expect.objectContaining({ code: 'E_CACHE_DIMS' }));
    expect(() => new QuantizedCache(1, 64, 64, { groupSize: 128 })).toThrow(/multiples of groupSize 128/);
    expect(() => new QuantizedCache(1, 64, 64, { vBits: 2 as 4 })).toThrow(/vBits/);
    const c = new ContiguousCache(H, D);
    expect(() => c.update(new Float32Array(10), new Float32Array(10), 1)).toThrow(expect.objectContaining({ code: 'E_SHAPE' }));
    expect(() => c.update(kRows(0, 1), vRows(0, 1), 1.5)).toThrow(/non-negative integer/);
    expect(() => c.trim(-1)).toThrow(expect.objectContaining({ code: 'E_CACHE_TRIM' }));
    c.update(kRows(0, 0), vRows(0, 0), 0);
    expect(c.offset).toBe(0);
  });

  it('a float contiguous trim is exact: trim then re-append == never trimmed', () => {
    const a = new ContiguousCache(H, D, D, { dtype: 'f16' }), b = new ContiguousCache(H, D, D, { dtype: 'f16' });
    a.update(kRows(0, 40), vRows(0, 40), 40);
    b.update(kRows(0, 30), vRows(0, 30), 30);
    b.update(randArray(10 * H * D, 9), randArray(10 * H * D, 10), 10);
    expect(b.trim(10)).toBe(10);
    b.update(kRows(30, 40), vRows(30, 40), 10);
    expect(bitsEqual(a.snapshot().main.k, b.snapshot().main.k) && bitsEqual(a.snapshot().main.v, b.snapshot().main.v)).toBe(true);
    expect(b.trim(100)).toBe(40);
    expect(b.offset).toBe(0);
  });

  it('a rotating trim drops the newest positions it still holds', () => {
    const r = new RotatingCache(H, D, 8);
    r.update(kRows(0, 20), vRows(0, 20), 20);
    expect(r.trim(3)).toBe(3);
    expect(r.offset).toBe(17);
    expect(Math.max(...r.slotPositions())).toBe(16);
    r.update(kRows(17, 20), vRows(17, 20), 3);
    const ref = new RotatingCache(H, D, 8);
    ref.update(kRows(0, 20), vRows(0, 20), 20);
    const q = qRows(0, 1);
    expect(relErr(r.attend(q, 1, NH, positions(19, 20), { scale: 0.1, window: 8 }), ref.attend(q, 1, NH, positions(19, 20), { scale: 0.1, window: 8 }))).toBeLessThan(1e-6);
    // Everything it holds can go; positions the ring overwrote cannot.
    const small = new RotatingCache(H, D, 4);
    for (let t = 0; t < 300; t++) small.update(kRows(t % T, (t % T) + 1), vRows(t % T, (t % T) + 1), 1);
    const held = small.slotPositions().length;
    expect(() => small.trim(held + 1)).toThrow(expect.objectContaining({ code: 'E_CACHE_TRIM' }));
    expect(small.offset).toBe(300);
  });
});
