/**
 * Padded prefill: with a cap at the sequence's true length, padding rows stay out of finalized
 * storage (never quantized, never evicting ring slots); trimming them restores exactly the unpadded
 * state, bit for bit, and later steps give bit-identical outputs. Trims that would reach quantized
 * rows refuse and change nothing.
 */
import { describe, expect, it } from 'vitest';
import { ContiguousCache, QuantizedCache, RotatingCache, type DetachedCache, type LayerCache } from '../src/index.js';
import { bitsEqual, randArray, relErr } from './helpers.js';

const H = 2, D = 64, NH = 4;
const N = 700;
const K = randArray(N * H * D, 1), V = randArray(N * H * D, 2), Q = randArray(N * NH * D, 3);
const rows = (a: Float32Array, w: number, s: number, e: number) => a.subarray(s * w, e * w);
const k = (s: number, e: number) => rows(K, H * D, s, e);
const v = (s: number, e: number) => rows(V, H * D, s, e);
const q = (s: number, e: number) => rows(Q, NH * D, s, e);
const pos = (s: number, e: number) => Int32Array.from({ length: e - s }, (_, i) => s + i);
const opts = (window: number) => ({ scale: 0.125, ...(window ? { window } : {}) });

/** Padding rows: garbage, including huge values (they must never matter). */
function padding(n: number, w: number, seed: number): Float32Array {
  const p = randArray(n * w, seed, 1000);
  return p;
}

function expectSameState(a: DetachedCache, b: DetachedCache): void {
  expect({ ...a, main: null, staging: null }).toEqual({ ...b, main: null, staging: null });
  for (const im of ['main', 'staging'] as const)
    for (const key of ['pos', 'k', 'v', 'kScales', 'kBiases', 'vScales', 'vBiases'] as const) {
      const x = a[im][key], y = b[im][key];
      expect(x === undefined, `${im}.${key}`).toBe(y === undefined);
      if (x && y) expect(bitsEqual(x, y), `${im}.${key}`).toBe(true);
    }
}

/** Unpadded run: `before` rows, then a chunk of `L`, then `decode` single steps. Returns outputs and the state after the chunk. */
function unpadded(make: () => LayerCache, before: number, L: number, decode: number, window: number) {
  const c = make();
  for (let p = 0; p < before; p += 50) c.update(k(p, Math.min(before, p + 50)), v(p, Math.min(before, p + 50)), Math.min(50, before - p));
  const chunk = (c.update(k(before, before + L), v(before, before + L), L), c.attend(q(before, before + L), L, NH, pos(before, before + L), opts(window)));
  const state = c.snapshot();
  const steps: Float32Array[] = [];
  for (let t = before + L; t < before + L + decode; t++) {
    c.update(k(t, t + 1), v(t, t + 1), 1);
    steps.push(c.attend(q(t, t + 1), 1, NH, pos(t, t + 1), opts(window)));
  }
  return { chunk, state, steps };
}

/** The same with the chunk right-padded by P garbage rows under a cap, then trimmed. */
function padded(make: () => LayerCache, before: number, L: number, P: number, decode: number, window: number, cap = true) {
  const c = make();
  for (let p = 0; p < before; p += 50) c.update(k(p, Math.min(before, p + 50)), v(p, Math.min(before, p + 50)), Math.min(50, before - p));
  const kp = new Float32Array((L + P) * H * D), vp = new Float32Array((L + P) * H * D), qp = new Float32Array((L + P) * NH * D);
  kp.set(k(before, before + L));
  kp.set(padding(P, H * D, 7), L * H * D);
  vp.set(v(before, before + L));
  vp.set(padding(P, H * D, 8), L * H * D);
  qp.set(q(before, before + L));
  qp.set(padding(P, NH * D, 9), L * NH * D);
  if (cap) c.setCap(before + L);
  c.update(kp, vp, L + P);
  const chunk = c.attend(qp, L + P, NH, pos(before, before + L + P), opts(window)).subarray(0, L * NH * D);
  const staged = c.staged;
  expect(c.trim(P)).toBe(P);
  c.setCap(null);
  const state = c.snapshot();
  const steps: Float32Array[] = [];
  for (let t = before + L; t < before + L + decode; t++) {
    c.update(k(t, t + 1), v(t, t + 1), 1);
    steps.push(c.attend(q(t, t + 1), 1, NH, pos(t, t + 1), opts(window)));
  }
  return { chunk, state, steps, staged };
}

const KINDS: [string, () => LayerCache, number][] = [
  ['quantized q8', () => new QuantizedCache(H, D), 0],
  ['quantized k8v4', () => new QuantizedCache(H, D, D, { vBits: 4 }), 0],
  ['contiguous f16', () => new ContiguousCache(H, D, D, { dtype: 'f16' }), 0],
  ['rotating f32 (full ring)', () => new RotatingCache(H, D, 16), 16],
  ['rotating k8v4 (full ring)', () => new RotatingCache(H, D, 24, D, { dtype: 'k8v4' }), 24],
];

describe('padded prefill + cap + trim == unpadded, bitwise', () => {
  for (const [name, make, window] of KINDS)
    for (const [before, L, P] of [[0, 37, 11], [600, 10, 6]])
      it(`${name}: ${before} tokens, then ${L} real + ${P} padding`, () => {
        const a = unpadded(make, before, L, 5, window);
        const b = padded(make, before, L, P, 5, window);
        expect(b.staged).toBe(P); // every padding row was held apart
        expect(relErr(b.chunk, a.chunk)).toBeLessThan(1e-6); // real rows never see padding
        expectSameState(b.state, a.state);
        b.steps.forEach((s, i) => expect(bitsEqual(s, a.steps[i]!), `decode step ${i}`).toBe(true));
      });

  it('without a cap, padding lands in finalized storage: quantized trims refuse, rings lose slots', () => {
    expect(() => padded(KINDS[0]![1], 0, 37, 11, 0, 0, false)).toThrow(expect.objectContaining({ code: 'E_CACHE_TRIM' }));
    const a = unpadded(KINDS[3]![1], 600, 10, 0, 16);
    const b = padded(KINDS[3]![1], 600, 10, 6, 0, 16, false);
    expect(bitsEqual(a.state.main.pos, b.state.main.pos) && a.state.ring!.next === b.state.ring!.next).toBe(false);
  });

  it('raising the cap finalizes the held rows below it (accepted speculative tokens)', () => {
    const L = 40;
    const ref = new QuantizedCache(H, D, D, { vBits: 4 });
    ref.update(k(0, L + 2), v(0, L + 2), L + 2);
    const c = new QuantizedCache(H, D, D, { vBits: 4 });
    c.update(k(0, L), v(0, L), L);
    c.setCap(L);
    c.update(k(L, L + 2), v(L, L + 2), 2);
    c.update(padding(1, H * D, 3), padding(1, H * D, 4), 1); // a rejected draft
    expect(c.staged).toBe(3);
    c.setCap(L + 2);
    expect([c.staged, c.offset]).toEqual([1, L + 3]);
    expect(c.trim(1)).toBe(1);
    c.setCap(null);
    expectSameState(c.snapshot(), ref.snapshot());
  });
});

describe('refusals', () => {
  it('a trim that would reach quantized rows throws E_CACHE_TRIM and changes nothing', () => {
    for (const make of [KINDS[0]![1], KINDS[1]![1], KINDS[4]![1]]) {
      const c = make();
      c.update(k(0, 30), v(0, 30), 30);
      c.setCap(30);
      c.update(k(30, 34), v(30, 34), 4);
      const before = c.snapshot();
      expect(() => c.trim(5)).toThrow(/would drop 1 quantized row\(s\) \(positions 29\.\.29\)/);
      expect(() => c.trim(5)).toThrow(expect.objectContaining({ code: 'E_CACHE_TRIM' }));
      expectSameState(c.snapshot(), before);
      expect(c.trim(4)).toBe(4); // the held rows still go
      expect(() => c.trim(1)).toThrow(expect.objectContaining({ code: 'E_CACHE_TRIM' }));
      expect(c.offset).toBe(30);
    }
  });

  it('a cap below finalized rows throws E_CACHE_CAP', () => {
    const c = new QuantizedCache(H, D);
    c.update(k(0, 20), v(0, 20), 20);
    expect(() => c.setCap(19)).toThrow(expect.objectContaining({ code: 'E_CACHE_CAP' }));
    expect(() => c.setCap(20.5)).toThrow(/integer >= 20/);
    c.setCap(25);
    expect(c.cap).toBe(25);
    c.update(k(20, 30), v(20, 30), 10);
    expect([c.staged, c.offset]).toEqual([5, 30]);
    expect(() => c.setCap(24)).toThrow(/25 rows are already finalized/);
  });
});
