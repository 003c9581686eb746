/**
 * Snapshot / detach / adopt: bit-exact for every kind (wrapped rings, held rows and caps included),
 * bit widths travel (a 4-bit V never comes back as 8-bit), the RoPE regime travels, and adopting a
 * state of another kind, storage or geometry is refused. Sequence-level adopt is all or nothing.
 */
import { describe, expect, it } from 'vitest';
import {
  adoptLayers, ContiguousCache, detachLayers, QuantizedCache, RotatingCache, SharedCache, snapshotLayers,
  type DetachedCache, type LayerCache,
} from '../src/index.js';
import { bitsEqual, randArray } from './helpers.js';

const H = 2, D = 64, NH = 8;
const K = randArray(400 * H * D, 1), V = randArray(400 * H * D, 2), Q = randArray(NH * D, 3);
const k = (s: number, e: number) => K.subarray(s * H * D, e * H * D);
const v = (s: number, e: number) => V.subarray(s * H * D, e * H * D);

function expectSameState(a: DetachedCache, b: DetachedCache): void {
  expect({ ...a, main: null, staging: null }).toEqual({ ...b, main: null, staging: null });
  for (const im of ['main', 'staging'] as const)
    for (const key of ['pos', 'k', 'v', 'kScales', 'kBiases', 'vScales', 'vBiases'] as const) {
      const x = a[im][key], y = b[im][key];
      expect(x === undefined, `${im}.${key}`).toBe(y === undefined);
      if (x && y) expect(bitsEqual(x, y), `${im}.${key}`).toBe(true);
    }
}

/** A cache with history: 300 tokens in chunks, a cap and 3 held rows, a regime id. */
function used(make: () => LayerCache): LayerCache {
  const c = make();
  for (let p = 0; p < 297; p += 33) c.update(k(p, p + 33), v(p, p + 33), 33);
  c.setCap(297);
  c.update(k(297, 300), v(297, 300), 3);
  c.ropeRegime = 'longrope:short:h=1234';
  return c;
}

const KINDS: [string, () => LayerCache][] = [
  ['contiguous f32', () => new ContiguousCache(H, D)],
  ['contiguous bf16', () => new ContiguousCache(H, D, D, { dtype: 'bf16' })],
  ['quantized q8', () => new QuantizedCache(H, D)],
  ['quantized k8v4', () => new QuantizedCache(H, D, D, { vBits: 4, groupSize: 32 })],
  ['rotating f16 (wrapped)', () => new RotatingCache(H, D, 40, D, { dtype: 'f16' })],
  ['rotating k8v4 (wrapped)', () => new RotatingCache(H, D, 40, D, { dtype: 'k8v4' })],
];

describe('detach / adopt round trips bit-exactly', () => {
  for (const [name, make] of KINDS)
    it(name, () => {
      const src = used(make);
      const snap = src.snapshot();
      const qPos = Int32Array.of(299);
      const before = src.attend(Q, 1, NH, qPos, { scale: 0.1, window: 40 });
      const detached = src.detach();
      expect([src.offset, src.staged, src.cap, src.ropeRegime, src.slotPositions().length]).toEqual([0, 0, null, '', 0]);
      expectSameState(detached, snap);
      const dst = make();
      dst.adopt(detached);
      expectSameState(dst.snapshot(), snap);
      expect([dst.offset, dst.staged, dst.cap, dst.ropeRegime]).toEqual([300, 3, 297, 'longrope:short:h=1234']);
      expect(bitsEqual(dst.attend(Q, 1, NH, qPos, { scale: 0.1, window: 40 }), before)).toBe(true);
      // The adopted cache continues exactly like the original would have.
      const twin = used(make);
      for (const c of [dst, twin]) {
        c.trim(3);
        c.setCap(null);
        c.update(k(297, 330), v(297, 330), 33);
      }
      expectSameState(dst.snapshot(), twin.snapshot());
      // A snapshot is a copy: mutating the source afterwards does not change it.
      const s2 = dst.snapshot();
      dst.update(k(330, 331), v(330, 331), 1);
      expect(s2.offset).toBe(330);
      // Adopting the same state twice gives two independent caches.
      const again = make();
      again.adopt(s2);
      expectSameState(again.snapshot(), s2);
    });

  it('bit widths travel: K8V4 stays 4-bit V through snapshot, detach and adopt', () => {
    const c = used(() => new QuantizedCache(H, D, D, { vBits: 4 }));
    const s = c.detach();
    expect([s.storage, s.kBits, s.vBits, s.groupSize]).toEqual(['k8v4', 8, 4, 64]);
    expect(s.main.v.length).toBe((297 * H * D * 4) / 8);
    expect(s.main.k.length).toBe(297 * H * D);
    const q8 = new QuantizedCache(H, D);
    expect(() => q8.adopt(s)).toThrow(/k8v4 \(K 8-bit, V 4-bit, group 64\), this cache q8 \(K 8-bit, V 8-bit/);
    const back = new QuantizedCache(H, D, D, { vBits: 4 });
    back.adopt(s);
    expect(back.snapshot().vBits).toBe(4);
  });
});

describe('adopt refusals (E_CACHE_ADOPT, nothing changed)', () => {
  const snapOf = (make: () => LayerCache) => used(make).snapshot();
  it('another kind, geometry, storage, window, or a corrupted state', () => {
    const target = used(() => new RotatingCache(H, D, 40));
    const keep = target.snapshot();
    const code = expect.objectContaining({ code: 'E_CACHE_ADOPT' });
    expect(() => target.adopt(snapOf(() => new ContiguousCache(H, D)))).toThrow(/contiguous cache, this is a rotating cache/);
    expect(() => target.adopt(snapOf(() => new RotatingCache(H, D, 41)))).toThrow(/window 41, this cache 40/);
    expect(() => target.adopt(snapOf(() => new RotatingCache(H, D, 40, D, { dtype: 'f16' })))).toThrow(/stores f16/);
    expect(() => target.adopt(snapOf(() => new RotatingCache(1, D, 40)))).toThrow(code);
    const good = snapOf(() => new RotatingCache(H, D, 40));
    expect(() => target.adopt({ ...good, version: 2 as 1 })).toThrow(/version 1/);
    expect(() => target.adopt({ ...good, offset: 5 })).toThrow(/offset 5 is smaller/);
    expect(() => target.adopt({ ...good, ring: { size: 10, next: 0 } })).toThrow(/ring size 10/);
    const badPos = { ...good, main: { ...good.main, pos: good.main.pos.map((p, i) => (i === 3 ? p + 1 : p)) } };
    expect(() => target.adopt(badPos)).toThrow(/ring order says/);
    const c = new ContiguousCache(H, D);
    const cs = snapOf(() => new ContiguousCache(H, D));
    expect(() => c.adopt({ ...cs, offset: cs.offset + 1 })).toThrow(/do not add up/);
    expect(() => c.adopt({ ...cs, main: { ...cs.main, pos: cs.main.pos.map((p) => p + 1) } })).toThrow(/slot 0 holds position 1/);
    expectSameState(target.snapshot(), keep);
    expect(c.offset).toBe(0);
  });
});

describe('a sequence of layers', () => {
  function layers(): LayerCache[] {
    const a = new QuantizedCache(H, D, D, { vBits: 4 }), b = new RotatingCache(H, D, 32, D, { dtype: 'f16' });
    return [a, b, new SharedCache(a), new SharedCache(b)];
  }
  function fill(ls: LayerCache[]) {
    for (const c of ls) if (c.kind !== 'shared') c.update(k(0, 100), v(0, 100), 100);
  }

  it('detachLayers + adoptLayers move a whole sequence, shared layers included', () => {
    const src = layers();
    fill(src);
    const want = snapshotLayers(src);
    const moved = detachLayers(src);
    expect(src.map((c) => c.offset)).toEqual([0, 0, 0, 0]);
    expect(moved.sources).toEqual([0, 1, 0, 1]);
    const dst = layers();
    adoptLayers(dst, moved);
    dst.forEach((c, i) => expectSameState(c.snapshot(), want.layers[i]!));
    expect(dst[3]!.offset).toBe(100);
  });

  it('refuses another layout before touching anything, and rolls back a layer that refuses', () => {
    const src = layers();
    fill(src);
    const state = snapshotLayers(src);
    const other = [src[0]!, new RotatingCache(H, D, 32, D, { dtype: 'f16' })];
    expect(() => adoptLayers(other, state)).toThrow(/state has 4 layers, this sequence 2/);
    const swapped = layers();
    const a = swapped[0]!;
    const reordered = [a, swapped[1]!, new SharedCache(swapped[1]!), new SharedCache(a)];
    expect(() => adoptLayers(reordered, state)).toThrow(/layer 2 reads layer 0 in the state, layer 1 here/);
    // Layer 1 refuses (another window): layer 0, already adopted, is rolled back.
    const mixed: LayerCache[] = [new QuantizedCache(H, D, D, { vBits: 4 }), new RotatingCache(H, D, 31, D, { dtype: 'f16' })];
    mixed.push(new SharedCache(mixed[0]!), new SharedCache(mixed[1]!));
    mixed[0]!.update(k(0, 5), v(0, 5), 5);
    const keep = mixed[0]!.snapshot();
    expect(() => adoptLayers(mixed, state)).toThrow(/window 32, this cache 31/);
    expectSameState(mixed[0]!.snapshot(), keep);
  });
});
