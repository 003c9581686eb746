/** The depthwise conv kernel (core-native dwconv2d) against a direct loop, and its argument checks. */
import * as native from '@mlxcel/core-native';
import { describe, expect, it } from 'vitest';
import { samePadding } from '../src/index.js';

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
