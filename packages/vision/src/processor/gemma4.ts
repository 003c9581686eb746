/**
 * Gemma 4 image processor: keep the aspect ratio, sides multiples of pooling_kernel · patch_size (48),
 * at most budget · k² patches; resize (bicubic, antialiased); rescale; patchify row-major over the
 * patch grid with (row, col, channel) order inside a patch; (x, y) patch positions; pad to max_patches
 * with zero patches at position (−1, −1).
 */
import { MlxcelError } from '@mlxcel/tensor';
import type { RgbImage } from '../image/decode.js';
import { resizeRgb } from '../image/resize.js';
import { channelLut } from './rescale.js';
import { checkBudget, type Gemma4ProcessorSettings } from './settings.js';

export interface Gemma4Pixels {
  family: 'gemma4';
  /** [maxPatches, 3·p²] patch vectors, zero rows past nPatches. */
  pixelValues: Float32Array;
  /** [maxPatches, 2] (x = patch column, y = patch row); (−1, −1) on padding rows. */
  positions: Int32Array;
  maxPatches: number;
  /** Real (non-padding) patches. */
  nPatches: number;
  patchSize: number;
  /** Size after the resize. */
  height: number;
  width: number;
  /** nPatches / k²: soft tokens this image takes in the prompt. */
  numSoftTokens: number;
}

/**
 * Target size for an h × w image (HF get_aspect_ratio_preserving_size, float64 maths):
 * f = √(maxPatches·p² / (h·w)), h' = ⌊f·h / side⌋·side, w' likewise, side = k·p; a side that rounds to
 * 0 becomes one `side` and the other min(⌊w/h⌋·side, (maxPatches/k²)·side).
 */
export function gemma4TargetSize(h: number, w: number, patchSize: number, poolingKernel: number, maxSoftTokens: number): { height: number; width: number } {
  const p = patchSize, k = poolingKernel, side = k * p;
  const maxPatches = maxSoftTokens * k * k;
  const f = Math.sqrt((maxPatches * p * p) / (h * w));
  let th = Math.floor((f * h) / side) * side;
  let tw = Math.floor((f * w) / side) * side;
  if (th === 0 && tw === 0) throw new MlxcelError('E_IMAGE', `Gemma 4 processor: a ${h} x ${w} image cannot be resized to multiples of ${side}`);
  if (th === 0) {
    th = side;
    tw = Math.min(Math.floor(w / h) * side, (maxPatches / (k * k)) * side);
  } else if (tw === 0) {
    tw = side;
    th = Math.min(Math.floor(h / w) * side, (maxPatches / (k * k)) * side);
  }
  if (th * tw > maxPatches * p * p)
    throw new MlxcelError('E_IMAGE', `Gemma 4 processor: target ${th} x ${tw} for a ${h} x ${w} image exceeds ${maxPatches} patches`);
  return { height: th, width: tw };
}

export function processGemma4(img: RgbImage, s: Gemma4ProcessorSettings, opts: { maxSoftTokens?: number } = {}): Gemma4Pixels {
  const budget = opts.maxSoftTokens ?? s.maxSoftTokens;
  checkBudget(budget, 'maxSoftTokens');
  const p = s.patchSize, k = s.poolingKernel;
  const maxPatches = budget * k * k;
  const t = s.doResize ? gemma4TargetSize(img.height, img.width, p, k, budget) : { height: img.height, width: img.width };
  if (t.height % p || t.width % p) throw new MlxcelError('E_IMAGE', `Gemma 4 processor: ${t.height} x ${t.width} is not a multiple of the patch size ${p}`);
  const r = resizeRgb(img, t.height, t.width, s.resample);
  const gh = t.height / p, gw = t.width / p, nPatches = gh * gw;
  if (nPatches > maxPatches) throw new MlxcelError('E_IMAGE', `Gemma 4 processor: ${nPatches} patches exceed max_patches ${maxPatches}`);
  const dim = 3 * p * p;
  const lut = channelLut(s);
  const pv = new Float32Array(maxPatches * dim);
  const pos = new Int32Array(maxPatches * 2).fill(-1);
  for (let py = 0; py < gh; py++)
    for (let px = 0; px < gw; px++) {
      const i = py * gw + px;
      pos[2 * i] = px;
      pos[2 * i + 1] = py;
      for (let row = 0; row < p; row++)
        for (let col = 0; col < p; col++) {
          const src = ((py * p + row) * t.width + px * p + col) * 3;
          const dst = i * dim + (row * p + col) * 3;
          for (let c = 0; c < 3; c++) pv[dst + c] = lut[c]![r.data[src + c]!]!;
        }
    }
  if (nPatches % (k * k)) throw new MlxcelError('E_IMAGE', `Gemma 4 processor: ${nPatches} patches are not a multiple of k² = ${k * k}`);
  return {
    family: 'gemma4', pixelValues: pv, positions: pos, maxPatches, nPatches, patchSize: p,
    height: t.height, width: t.width, numSoftTokens: nPatches / (k * k),
  };
}
