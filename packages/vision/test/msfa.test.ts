/**
 * The multi-scale fusion adapter's three ways to the output resolution (timm MobileNetV5MSFA):
 * none (already there), average pool (both sides multiples of it) and bilinear (otherwise), each
 * against the whole adapter recomputed here from its definition (reference ops, float64 arithmetic): nearest-upsample the
 * smaller input, concatenate channels, RN(pw_exp) + GELU, RN(pw_proj), resize, RN(norm).
 */
import { reference, relMaxDiff, Weight } from '@mlxcel/tensor';
import { describe, expect, it } from 'vitest';
import { ChannelNorm, MultiScaleFusion, RMS2D_EPS } from '../src/mobilenet/blocks.js';
import { PointwiseConv, type FeatureMap } from '../src/mobilenet/conv.js';
import { resampleReference } from './helpers.js';

function rand(n: number, seed: number, scale = 1): Float32Array {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) a[i] = (((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32) - 0.5) * scale;
  return a;
}

const C1 = 5, C2 = 3, E = 12, OUT_C = 7;
const wExp = rand(E * (C1 + C2), 11), wProj = rand(OUT_C * E, 12);
const gExp = rand(E, 13, 0.5).map((v) => v + 1), gProj = rand(OUT_C, 14, 0.5).map((v) => v + 1), gOut = rand(OUT_C, 15, 0.5).map((v) => v + 1);

function adapter(outSize: number): MultiScaleFusion {
  const pw = (name: string, w: Float32Array, o: number, i: number) => new PointwiseConv(name, Weight.fromF32(w, [o, i]));
  return new MultiScaleFusion(
    { conv: pw('pw_exp', wExp, E, C1 + C2), norm: new ChannelNorm('pw_exp.bn', gExp) },
    { conv: pw('pw_proj', wProj, OUT_C, E), norm: new ChannelNorm('pw_proj.bn', gProj) },
    new ChannelNorm('norm', gOut),
    outSize,
  );
}

/** The adapter in float64 (reference ops), hi [H, W, C1] and lo [h, w, C2] channels-last. */
function expectedOutput(hi: FeatureMap, lo: FeatureMap, outSize: number): Float32Array {
  const H = hi.h, W = hi.w, P = H * W;
  const up = resampleReference.nearest(lo.x, lo.h, lo.w, C2, H, W);
  const cat = new Float32Array(P * (C1 + C2));
  for (let i = 0; i < P; i++) {
    cat.set(hi.x.subarray(i * C1, (i + 1) * C1), i * (C1 + C2));
    cat.set(up.subarray(i * C2, (i + 1) * C2), i * (C1 + C2) + C1);
  }
  const exp = reference.rmsNorm(reference.matmul(cat, P, C1 + C2, wExp, E), E, gExp, RMS2D_EPS).map(reference.unary.geluTanh);
  let y = reference.rmsNorm(reference.matmul(exp, P, E, wProj, OUT_C), OUT_C, gProj, RMS2D_EPS);
  if (H !== outSize || W !== outSize)
    y = H % outSize || W % outSize
      ? resampleReference.bilinear(y, H, W, OUT_C, outSize, outSize)
      : resampleReference.avgPool(y, H, W, OUT_C, H / outSize, W / outSize);
  return reference.rmsNorm(y, OUT_C, gOut, RMS2D_EPS);
}

describe('MultiScaleFusion', () => {
  // [hi H, hi W, lo h, lo w, out]: bilinear down (10x10, 9x13 → 8), bilinear up (6 → 8), pool (16x8 → 8: 2x1), none.
  for (const [H, W, h, w, out, path] of [
    [10, 10, 5, 5, 8, 'bilinear'], [9, 13, 5, 7, 8, 'bilinear'], [6, 6, 3, 3, 8, 'bilinear'],
    [16, 8, 8, 4, 8, 'average pool'], [8, 8, 4, 4, 8, 'no resize'],
  ] as const) {
    it(`${H}x${W} (+ ${h}x${w}) → ${out}x${out}: ${path}`, () => {
      const hi: FeatureMap = { x: rand(H * W * C1, H * 100 + W), h: H, w: W, c: C1 };
      const lo: FeatureMap = { x: rand(h * w * C2, h * 100 + w + 7), h, w, c: C2 };
      const want = expectedOutput(hi, lo, out);
      const got = adapter(out).forward([hi, { ...lo, x: lo.x.slice() }]);
      expect([got.h, got.w, got.c]).toEqual([out, out, OUT_C]);
      expect(relMaxDiff(got.x, want)).toBeLessThan(1e-5);
    });
  }

  it('a second input that is larger than the first is refused by name', () => {
    const hi: FeatureMap = { x: rand(4 * 4 * C1, 1), h: 4, w: 4, c: C1 };
    const lo: FeatureMap = { x: rand(8 * 8 * C2, 2), h: 8, w: 8, c: C2 };
    expect(() => adapter(8).forward([hi, lo])).toThrow(/MSFA: a 8x8 input does not match the first input's 4x4/);
  });
});
