/**
 * The vision kernels against direct loops, and their argument checks: the depthwise conv (core-native
 * dwconv2d) and the MSFA's average pool, nearest and bilinear resizes (avgPool2d, resizeNearest2d,
 * resizeBilinear2d).
 */
import * as native from '@mlxcel/core-native';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { samePadding } from '../src/index.js';
import { resampleReference } from './helpers.js';

function rand(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) a[i] = ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32) - 0.5;
  return a;
}

/** Direct depthwise conv: x [h, w, c], weight [k·k, c], zero padding (top, left), given output size. */
function reference(x: Float32Array, h: number, w: number, c: number, wt: Float32Array, k: number, s: number, pt: number, pl: number, oh: number, ow: number): Float32Array {
  const out = new Float32Array(oh * ow * c);
  for (let oy = 0; oy < oh; oy++)
    for (let ox = 0; ox < ow; ox++)
      for (let ch = 0; ch < c; ch++) {
        let a = 0;
        for (let ky = 0; ky < k; ky++)
          for (let kx = 0; kx < k; kx++) {
            const iy = oy * s + ky - pt, ix = ox * s + kx - pl;
            if (iy >= 0 && iy < h && ix >= 0 && ix < w) a += wt[(ky * k + kx) * c + ch]! * x[(iy * w + ix) * c + ch]!;
          }
        out[(oy * ow + ox) * c + ch] = a;
      }
  return out;
}

describe('SAME padding (TF style)', () => {
  it('is asymmetric for stride 2 on even maps, symmetric on odd maps and for stride 1', () => {
    expect(samePadding(8, 3, 2)).toEqual([0, 1]);
    expect(samePadding(8, 5, 2)).toEqual([1, 2]);
    expect(samePadding(7, 3, 2)).toEqual([1, 1]);
    expect(samePadding(7, 5, 1)).toEqual([2, 2]);
    expect(samePadding(9, 3, 1)).toEqual([1, 1]);
  });
});

describe('dwconv2d', () => {
  for (const [h, w, c, k, s] of [[8, 6, 19, 3, 2], [7, 9, 33, 5, 2], [5, 5, 16, 5, 1], [12, 4, 1, 3, 1]] as const) {
    it(`${h}x${w}x${c}, k ${k}, stride ${s}, SAME padding`, () => {
      const [pt, pb] = samePadding(h, k, s), [pl, pr] = samePadding(w, k, s);
      const oh = Math.floor((h + pt + pb - k) / s) + 1, ow = Math.floor((w + pl + pr - k) / s) + 1;
      expect([oh, ow]).toEqual([Math.ceil(h / s), Math.ceil(w / s)]);
      const x = rand(h * w * c, 1), wt = rand(k * k * c, 2), out = new Float32Array(oh * ow * c);
      const r = native.dwconv2d({ x, h, w, c, weight: wt, kh: k, kw: k, strideH: s, strideW: s, padTop: pt, padBottom: pb, padLeft: pl, padRight: pr, out });
      expect(r).toEqual({ outH: oh, outW: ow });
      const ref = reference(x, h, w, c, wt, k, s, pt, pl, oh, ow);
      let md = 0;
      for (let i = 0; i < ref.length; i++) md = Math.max(md, Math.abs(out[i]! - ref[i]!));
      expect(md).toBeLessThan(1e-5);
    });
  }

  it('rejects short buffers, aliasing and oversized kernels with a clear error', () => {
    const x = new Float32Array(4 * 4 * 2), wt = new Float32Array(9 * 2);
    const base = { x, h: 4, w: 4, c: 2, weight: wt, kh: 3, kw: 3, strideH: 1, strideW: 1, padTop: 1, padBottom: 1, padLeft: 1, padRight: 1 };
    expect(() => native.dwconv2d({ ...base, out: new Float32Array(5) })).toThrow(/dwconv2d: out/);
    expect(() => native.dwconv2d({ ...base, weight: new Float32Array(3), out: new Float32Array(32) })).toThrow(/dwconv2d: weight/);
    expect(() => native.dwconv2d({ ...base, out: x })).toThrow(/must not alias x/);
    expect(() => native.dwconv2d({ ...base, kh: 9, kw: 9, out: new Float32Array(32) })).toThrow(/smaller than the kernel/);
    expect(() => native.dwconv2d({ ...base, h: 2 ** 40, out: new Float32Array(32) })).toThrow(/dwconv2d: h/);
  });
});

function maxDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let md = 0;
  for (let i = 0; i < a.length; i++) md = Math.max(md, Math.abs(a[i]! - b[i]!));
  return md;
}

const initialIsa = native.cpuInfo().isa;
afterAll(() => native.setIsa(initialIsa));

// On every kernel variant this CPU runs (each is compiled with its own ISA flags).
for (const isa of native.cpuInfo().variants) describe(`MSFA resampling kernels [${isa}]`, () => {
  beforeAll(() => {
    native.setIsa(isa);
  });

  // Channel counts around the vector widths (4, 8, 16 floats) exercise the vector body and the tail.
  for (const [h, w, c, kh, kw] of [[32, 16, 19, 2, 1], [48, 48, 16, 3, 3], [6, 10, 33, 3, 5], [5, 5, 1, 5, 5]] as const) {
    it(`avgPool2d ${h}x${w}x${c}, kernel ${kh}x${kw}: bit-identical to f32 sums and an f32 division`, () => {
      const x = rand(h * w * c, 3), out = new Float32Array((h / kh) * (w / kw) * c);
      expect(native.avgPool2d({ x, h, w, c, kh, kw, out })).toEqual({ outH: h / kh, outW: w / kw });
      expect(maxDiff(out, resampleReference.avgPool(x, h, w, c, kh, kw))).toBe(0);
    });
  }

  for (const [h, w, c, oh, ow] of [[8, 4, 19, 16, 8], [24, 24, 16, 48, 48], [3, 5, 7, 7, 11], [4, 4, 9, 4, 4]] as const) {
    it(`resizeNearest2d ${h}x${w} -> ${oh}x${ow} (c ${c}): the exact source pixels`, () => {
      const x = rand(h * w * c, 4), out = new Float32Array(oh * ow * c);
      expect(native.resizeNearest2d({ x, h, w, c, outH: oh, outW: ow, out })).toEqual({ outH: oh, outW: ow });
      expect(maxDiff(out, resampleReference.nearest(x, h, w, c, oh, ow))).toBe(0);
    });
  }

  // Down (20 → 16, 24x20 → 16x16, 17 → 16), up (8 → 16, 5x7 → 16x16) and identity.
  for (const [h, w, c, oh, ow] of [[20, 20, 19, 16, 16], [24, 20, 8, 16, 16], [17, 33, 16, 16, 16], [8, 8, 33, 16, 16], [5, 7, 3, 16, 16], [6, 6, 5, 6, 6]] as const) {
    it(`resizeBilinear2d ${h}x${w} -> ${oh}x${ow} (c ${c}) matches PyTorch's formula`, () => {
      const x = rand(h * w * c, 5), out = new Float32Array(oh * ow * c);
      expect(native.resizeBilinear2d({ x, h, w, c, outH: oh, outW: ow, out })).toEqual({ outH: oh, outW: ow });
      // f32 weights and products against float64: a few ulp of values in [-0.5, 0.5].
      expect(maxDiff(out, resampleReference.bilinear(x, h, w, c, oh, ow))).toBeLessThan(1e-6);
    });
  }

  it('bilinear at an exact 2x downscale averages the 2x2 neighbourhood (align_corners = false)', () => {
    const x = Float32Array.from({ length: 16 }, (_, i) => i), out = new Float32Array(4);
    native.resizeBilinear2d({ x, h: 4, w: 4, c: 1, outH: 2, outW: 2, out });
    expect(Array.from(out)).toEqual([2.5, 4.5, 10.5, 12.5]);
  });
});

describe('MSFA resampling kernels: argument checks', () => {
  it('reject bad sizes, short buffers and aliasing with a clear error', () => {
    const x = new Float32Array(4 * 4 * 2), out = new Float32Array(32);
    expect(() => native.avgPool2d({ x, h: 4, w: 4, c: 2, kh: 3, kw: 2, out })).toThrow(/avgPool2d: the kernel \[3, 2\] does not divide the map \[4, 4\]/);
    expect(() => native.avgPool2d({ x, h: 4, w: 4, c: 2, kh: 8, kw: 2, out })).toThrow(/avgPool2d: kh/);
    expect(() => native.avgPool2d({ x, h: 4, w: 4, c: 2, kh: 2, kw: 2, out: new Float32Array(7) })).toThrow(/avgPool2d: out/);
    expect(() => native.avgPool2d({ x, h: 4, w: 4, c: 2, kh: 1, kw: 1, out: x })).toThrow(/must not alias x/);
    expect(() => native.resizeNearest2d({ x, h: 4, w: 4, c: 2, outH: 8, outW: 8, out })).toThrow(/resizeNearest2d: out/);
    expect(() => native.resizeBilinear2d({ x: new Float32Array(3), h: 4, w: 4, c: 2, outH: 2, outW: 2, out })).toThrow(/resizeBilinear2d: x/);
    expect(() => native.resizeBilinear2d({ x, h: 4, w: 4, c: 2, outH: 0, outW: 2, out })).toThrow(/resizeBilinear2d: outH/);
    expect(() => native.resizeBilinear2d({ x, h: 2 ** 40, w: 4, c: 2, outH: 2, outW: 2, out })).toThrow(/resizeBilinear2d: h/);
    expect(() => native.resizeBilinear2d({ x, h: 4, w: 4, c: 2, outH: 2 ** 24, outW: 2 ** 24, out })).toThrow(/resizeBilinear2d: out/);
    expect(() => native.resizeNearest2d(undefined as never)).toThrow(/expects one options object/);
  });
});
