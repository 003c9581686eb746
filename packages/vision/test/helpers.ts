import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openExpected, type ExpectedTensors } from '@mlxcel/tensor';


const here = dirname(fileURLToPath(import.meta.url));
/** Fixtures are copied into the repository (tests read nothing outside it). */
export const FIXTURES = resolve(here, '../../../fixtures');

/** The expected tensors of fixture `name` (fixtures/<name>/expected.safetensors). */
export function expected(name: string): ExpectedTensors {
  return openExpected(join(FIXTURES, name));
}

/** Channels-last [h, w, c] -> NCHW [c, h, w] (the fixtures' layout). */
export function toChw(x: Float32Array, h: number, w: number, c: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < h * w; i++) for (let k = 0; k < c; k++) out[k * h * w + i] = x[i * c + k]!;
  return out;
}

/** Direct loops of the MSFA resampling (PyTorch semantics), to check the native kernels against. */
export const resampleReference = {
  /** F.avg_pool2d, kernel = stride: f32 sums in (dy, dx) order, then an f32 division. */
  avgPool(x: Float32Array, h: number, w: number, c: number, kh: number, kw: number): Float32Array {
    const oh = h / kh, ow = w / kw, out = new Float32Array(oh * ow * c), f = Math.fround;
    for (let y = 0; y < oh; y++)
      for (let xx = 0; xx < ow; xx++)
        for (let ch = 0; ch < c; ch++) {
          let s = 0;
          for (let dy = 0; dy < kh; dy++) for (let dx = 0; dx < kw; dx++) s = f(s + x[((y * kh + dy) * w + xx * kw + dx) * c + ch]!);
          out[(y * ow + xx) * c + ch] = f(s / (kh * kw));
        }
    return out;
  },
  /** F.interpolate nearest: src = floor(dst · in / out). */
  nearest(x: Float32Array, h: number, w: number, c: number, oh: number, ow: number): Float32Array {
    const out = new Float32Array(oh * ow * c);
    for (let y = 0; y < oh; y++)
      for (let xx = 0; xx < ow; xx++) {
        const sy = Math.floor((y * h) / oh), sx = Math.floor((xx * w) / ow);
        for (let ch = 0; ch < c; ch++) out[(y * ow + xx) * c + ch] = x[(sy * w + sx) * c + ch]!;
      }
    return out;
  },
  /**
   * F.interpolate bilinear, align_corners = false, no antialias, in float64: source coordinate
   * max((dst + ½) · in/out − ½, 0), i0 = ⌊·⌋ (≤ in − 1), i1 = min(i0 + 1, in − 1), weights (1 − λ, λ).
   */
  bilinear(x: Float32Array, h: number, w: number, c: number, oh: number, ow: number): Float32Array {
    const tap = (d: number, n: number, o: number) => {
      const real = Math.max(((d + 0.5) * n) / o - 0.5, 0);
      const i0 = Math.min(Math.floor(real), n - 1);
      const l = Math.min(Math.max(real - i0, 0), 1);
      return { i0, i1: Math.min(i0 + 1, n - 1), w0: 1 - l, w1: l };
    };
    const out = new Float32Array(oh * ow * c);
    for (let y = 0; y < oh; y++) {
      const ty = tap(y, h, oh);
      for (let xx = 0; xx < ow; xx++) {
        const tx = tap(xx, w, ow);
        const at = (yy: number, xi: number, ch: number) => x[(yy * w + xi) * c + ch]!;
        for (let ch = 0; ch < c; ch++) {
          const t0 = at(ty.i0, tx.i0, ch) * tx.w0 + at(ty.i0, tx.i1, ch) * tx.w1;
          const t1 = at(ty.i1, tx.i0, ch) * tx.w0 + at(ty.i1, tx.i1, ch) * tx.w1;
          out[(y * ow + xx) * c + ch] = t0 * ty.w0 + t1 * ty.w1;
        }
      }
    }
    return out;
  },
};
