/** uint8 -> float32 rescale (and optional normalisation), as the torchvision backend computes it. */
import type { ProcessorSettings } from './settings.js';

/**
 * Channel c of an 8-bit value v: float32(v) · float32(rescale_factor), rounded to float32 (one f32
 * multiply, the torchvision backend; the PIL backend's correctly rounded v/255 is at most 1 ulp away),
 * then (x − mean_c) / std_c in float32 when do_normalize.
 */
export function channelLut(s: ProcessorSettings): Float32Array[] {
  const f = Math.fround(s.doRescale ? s.rescaleFactor : 1);
  return [0, 1, 2].map((c) => {
    const lut = new Float32Array(256);
    for (let v = 0; v < 256; v++) {
      let x = Math.fround(v * f);
      if (s.doNormalize) x = Math.fround(Math.fround(x - Math.fround(s.mean[c]!)) / Math.fround(s.std[c]!));
      lut[v] = x;
    }
    return lut;
  });
}
