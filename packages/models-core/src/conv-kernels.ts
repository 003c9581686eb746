/**
 * Conv2d kernels as the channels-last convolutions read them: [cout, kh·kw·cin] in (kh, kw, cin)
 * order. Hugging Face checkpoints store torch's [cout, cin, kh, kw]; mlx-vlm conversions store
 * channels-last [cout, kh, kw, cin] already. Used by the audio subsampling convs and the MobileNetV5
 * full convs.
 */
import { MlxcelError, type Tensor, type WeightStore } from '@mlxcel/tensor';

export type ConvLayout = 'torch' | 'channels-last';

/** The sizes of a 4-D conv kernel tensor read in `layout`. */
export function convKernelDims(shape: readonly number[], layout: ConvLayout): { cout: number; cin: number; kh: number; kw: number } {
  const [cout, a, b, c] = shape as [number, number, number, number];
  return layout === 'torch' ? { cout, cin: a, kh: b, kw: c } : { cout, kh: a, kw: b, cin: c };
}

/** The kernel tensor `t` ([cout, cin, kh, kw] torch or [cout, kh, kw, cin]) as f32 [cout, kh·kw·cin], (kh, kw, cin) order. */
export function channelsLastKernel(t: Tensor, layout: ConvLayout): Float32Array {
  const src = t.toF32();
  if (layout === 'channels-last') return Float32Array.from(src);
  const { cout, cin, kh, kw } = convKernelDims(t.shape, layout);
  const out = new Float32Array(cout * kh * kw * cin);
  for (let o = 0; o < cout; o++)
    for (let i = 0; i < cin; i++)
      for (let y = 0; y < kh; y++)
        for (let x = 0; x < kw; x++) out[((o * kh + y) * kw + x) * cin + i] = src[((o * cin + i) * kh + y) * kw + x]!;
  return out;
}

/** `name` (a 4-D conv kernel) from the store, or a clear error when it is missing or not 4-D. */
export function convKernelTensor(store: WeightStore, name: string): Tensor {
  if (!store.has(name)) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${name}`);
  const t = store.get(name);
  if (t.shape.length !== 4) throw new MlxcelError('E_SHAPE', `${name}: shape [${t.shape}] is not a 4-D conv kernel`);
  return t;
}

/**
 * A kernel whose sizes the caller knows (the audio subsampling convs): the layout is told apart by
 * shape (torch wins when both read alike), anything else is an E_SHAPE naming both expected shapes.
 */
export function loadConvKernel(store: WeightStore, name: string, dims: { cout: number; cin: number; kh: number; kw: number }): Float32Array {
  if (!store.has(name)) throw new MlxcelError('E_MISSING_TENSOR', `missing tensor ${name}`);
  const t = store.get(name);
  const { cout, cin, kh, kw } = dims;
  const s = t.shape;
  const torch = s.length === 4 && s[0] === cout && s[1] === cin && s[2] === kh && s[3] === kw;
  const mlx = s.length === 4 && s[0] === cout && s[1] === kh && s[2] === kw && s[3] === cin;
  if (!torch && !mlx)
    throw new MlxcelError('E_SHAPE', `${name}: shape [${s}] is neither [${cout}, ${cin}, ${kh}, ${kw}] (HF) nor [${cout}, ${kh}, ${kw}, ${cin}] (MLX)`);
  return channelsLastKernel(t, torch ? 'torch' : 'channels-last');
}
