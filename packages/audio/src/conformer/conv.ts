/**
 * The subsampling Conv2d of both audio towers, channels-last ([time, freq, channel] activations), so
 * the per-position norms see contiguous channels and the final flatten (index f * C + c) is free.
 * Kernels load through @mlxcel/models-core's `loadConvKernel` (HF torch or MLX channels-last layout).
 */
import * as native from '@mlxcel/core-native';

export interface Conv2dSpec {
  cin: number;
  cout: number;
  kh: number;
  kw: number;
  strideH: number;
  strideW: number;
  /** Zero padding [top, bottom, left, right] (time before/after, frequency before/after). */
  pad: [number, number, number, number];
}

/** x [h, w, cin] -> [outH, outW, cout]. */
export function conv2d(x: Float32Array, h: number, w: number, weight: Float32Array, spec: Conv2dSpec): { out: Float32Array; outH: number; outW: number } {
  const [pt, pb, pl, pr] = spec.pad;
  const outH = Math.floor((h + pt + pb - spec.kh) / spec.strideH) + 1;
  const outW = Math.floor((w + pl + pr - spec.kw) / spec.strideW) + 1;
  const out = new Float32Array(Math.max(0, outH) * outW * spec.cout);
  native.conv2d({
    x, h, w, cin: spec.cin, weight, cout: spec.cout, kh: spec.kh, kw: spec.kw,
    strideH: spec.strideH, strideW: spec.strideW, padTop: pt, padBottom: pb, padLeft: pl, padRight: pr, out,
  });
  return { out, outH, outW };
}
