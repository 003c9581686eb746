/**
 * The subsampling Conv2d of both audio towers, channels-last ([time, freq, channel] activations), so
 * the per-position norms see contiguous channels and the final flatten (index f * C + c) is free.
 */
import * as native from '@mlxcel/core-native';
import { MlxcelError, type WeightStore } from '@mlxcel/tensor';

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

/**
 * Conv2d weights as [cout, kh*kw*cin] in (kh, kw, cin) order. HF stores [cout, cin, kh, kw]; mlx-vlm
 * conversions store channels-last [cout, kh, kw, cin]; the layout is told apart by shape.
 */
export function loadConv2d(store: WeightStore, name: string, spec: Conv2dSpec): Float32Array {
  if (!store.has(name)) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${name}`);
  const t = store.get(name);
  const { cout, cin, kh, kw } = spec;
  const s = t.shape;
  const hf = s.length === 4 && s[0] === cout && s[1] === cin && s[2] === kh && s[3] === kw;
  const mlx = s.length === 4 && s[0] === cout && s[1] === kh && s[2] === kw && s[3] === cin;
  if (!hf && !mlx)
    throw new MlxcelError('E_SHAPE', `${name}: shape [${s}] is neither [${cout}, ${cin}, ${kh}, ${kw}] (HF) nor [${cout}, ${kh}, ${kw}, ${cin}] (MLX)`);
  const src = t.toF32();
  if (mlx && !hf) return Float32Array.from(src);
  const out = new Float32Array(cout * kh * kw * cin);
  for (let o = 0; o < cout; o++)
    for (let i = 0; i < cin; i++)
      for (let y = 0; y < kh; y++)
        for (let x = 0; x < kw; x++) out[((o * kh + y) * kw + x) * cin + i] = src[((o * cin + i) * kh + y) * kw + x]!;
  return out;
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
