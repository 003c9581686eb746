/**
 * Gemma 3n image processor: stretch to exactly the configured size (no aspect ratio, no crop, no pad)
 * with the antialiased filter of `resample` (bilinear), rescale by 1/255, channels-first [3, H, W].
 */
import type { RgbImage } from '../image/decode.js';
import { resizeRgb } from '../image/resize.js';
import { channelLut } from './rescale.js';
import type { Gemma3nProcessorSettings } from './settings.js';

export interface Gemma3nPixels {
  family: 'gemma3n';
  /** [3, height, width], R G B planes. */
  pixelValues: Float32Array;
  height: number;
  width: number;
  /** Soft tokens this image takes in the prompt. */
  numSoftTokens: number;
}

export function processGemma3n(img: RgbImage, s: Gemma3nProcessorSettings): Gemma3nPixels {
  const r = s.doResize ? resizeRgb(img, s.height, s.width, s.resample) : img;
  const H = r.height, W = r.width, n = H * W;
  const lut = channelLut(s);
  const out = new Float32Array(3 * n);
  for (let i = 0; i < n; i++) for (let c = 0; c < 3; c++) out[c * n + i] = lut[c]![r.data[3 * i + c]!]!;
  return { family: 'gemma3n', pixelValues: out, height: H, width: W, numSoftTokens: s.imageSeqLength };
}
