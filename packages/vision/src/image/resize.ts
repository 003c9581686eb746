/**
 * Antialiased separable resampling of 8-bit RGB, the algorithm both HF processor backends use
 * (Pillow's `ImagingResample`; torchvision's uint8 antialias path is a port of it): for each output
 * pixel a filter centred on (x + 0.5)·scale whose support widens by the scale factor when shrinking,
 * weights normalised to sum 1 and rounded to 22-bit fixed point, a horizontal pass into an 8-bit
 * intermediate, then a vertical pass, each rounded and clipped to [0, 255].
 */
import { MlxcelError } from '@mlxcel/tensor';
import type { RgbImage } from './decode.js';

/** PIL.Image resample codes as they appear in preprocessor_config.json (`resample`). */
export type ResampleFilter = 'bilinear' | 'bicubic';

export function resampleFromCode(code: unknown, where: string): ResampleFilter {
  if (code === 2) return 'bilinear';
  if (code === 3) return 'bicubic';
  throw new MlxcelError('E_CONFIG', `${where}: resample ${JSON.stringify(code)} is not supported (2 = bilinear, 3 = bicubic)`);
}

interface Filter {
  support: number;
  fn: (x: number) => number;
}

const FILTERS: Record<ResampleFilter, Filter> = {
  bilinear: { support: 1, fn: (x) => { x = Math.abs(x); return x < 1 ? 1 - x : 0; } },
  // Keys cubic with a = -0.5 (Pillow and torchvision's antialiased bicubic).
  bicubic: {
    support: 2,
    fn: (x) => {
      const a = -0.5;
      x = Math.abs(x);
      if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
      if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
      return 0;
    },
  },
};

const PRECISION_BITS = 32 - 8 - 2;

export interface ResampleCoefficients {
  /** Taps per output pixel (the row stride of `weights`). */
  ksize: number;
  /** [out] first input index and tap count of each output pixel. */
  start: Int32Array;
  count: Int32Array;
  /** [out, ksize] normalised weights in float64 (before fixed-point rounding). */
  weights: Float64Array;
}

/** The per-output-pixel filter weights for resizing `inSize` to `outSize` (Pillow's precompute_coeffs). */
export function resampleCoefficients(inSize: number, outSize: number, filter: ResampleFilter): ResampleCoefficients {
  const f = FILTERS[filter];
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = f.support * filterScale;
  const ksize = Math.ceil(support) * 2 + 1;
  const start = new Int32Array(outSize), count = new Int32Array(outSize);
  const weights = new Float64Array(outSize * ksize);
  const ss = 1 / filterScale;
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    // C's (int) cast truncates toward zero; both operands are > -1 here, so trunc is the rule.
    const xmin = Math.max(0, Math.trunc(center - support + 0.5));
    const xmax = Math.min(inSize, Math.trunc(center + support + 0.5)) - xmin;
    let ww = 0;
    for (let x = 0; x < xmax; x++) {
      const w = f.fn((x + xmin - center + 0.5) * ss);
      weights[xx * ksize + x] = w;
      ww += w;
    }
    if (ww !== 0) for (let x = 0; x < xmax; x++) weights[xx * ksize + x] /= ww;
    start[xx] = xmin;
    count[xx] = xmax;
  }
  return { ksize, start, count, weights };
}

function fixedPoint(c: ResampleCoefficients): Int32Array {
  const k = new Int32Array(c.weights.length);
  const one = 1 << PRECISION_BITS;
  for (let i = 0; i < k.length; i++) {
    const w = c.weights[i]!;
    k[i] = w < 0 ? Math.trunc(-0.5 + w * one) : Math.trunc(0.5 + w * one);
  }
  return k;
}

function clip8(acc: number): number {
  const v = acc >> PRECISION_BITS;
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

/** Resizes RGB to `outH` × `outW`; the identity (same array) when the size already matches. */
export function resizeRgb(img: RgbImage, outH: number, outW: number, filter: ResampleFilter): RgbImage {
  if (!(Number.isInteger(outH) && Number.isInteger(outW) && outH > 0 && outW > 0))
    throw new MlxcelError('E_ARG', `resize: target ${outH} x ${outW} is not a positive integer size`);
  const { width: W, height: H } = img;
  if (W === outW && H === outH) return img;
  let cur = img;
  if (W !== outW) {
    const c = resampleCoefficients(W, outW, filter);
    const k = fixedPoint(c);
    const out = new Uint8Array(H * outW * 3);
    const src = cur.data;
    for (let y = 0; y < H; y++) {
      const row = y * W * 3;
      for (let x = 0; x < outW; x++) {
        const s = c.start[x]!, n = c.count[x]!, kb = x * c.ksize;
        let r = 1 << (PRECISION_BITS - 1), g = r, b = r;
        for (let t = 0; t < n; t++) {
          const w = k[kb + t]!, p = row + (s + t) * 3;
          r += src[p]! * w;
          g += src[p + 1]! * w;
          b += src[p + 2]! * w;
        }
        const o = (y * outW + x) * 3;
        out[o] = clip8(r);
        out[o + 1] = clip8(g);
        out[o + 2] = clip8(b);
      }
    }
    cur = { data: out, width: outW, height: H };
  }
  if (H !== outH) {
    const c = resampleCoefficients(H, outH, filter);
    const k = fixedPoint(c);
    const Wc = cur.width;
    const out = new Uint8Array(outH * Wc * 3);
    const src = cur.data;
    for (let y = 0; y < outH; y++) {
      const s = c.start[y]!, n = c.count[y]!, kb = y * c.ksize;
      for (let x = 0; x < Wc * 3; x++) {
        let acc = 1 << (PRECISION_BITS - 1);
        for (let t = 0; t < n; t++) acc += src[(s + t) * Wc * 3 + x]! * k[kb + t]!;
        out[y * Wc * 3 + x] = clip8(acc);
      }
    }
    cur = { data: out, width: Wc, height: outH };
  }
  return cur;
}
