/**
 * MobileNetV5 convolutions on channels-last feature maps ([h, w, C] row-major): TF-style SAME padding,
 * full conv (im2col + GEMM, core-native conv2d), depthwise conv (core-native dwconv2d) and pointwise
 * conv (a matmul over channels on the stored weight, bf16/f16 kept as stored). Kernels come in torch
 * layout [out, in/groups, kh, kw] (HF) or channels-last [out, kh, kw, in/groups] (mlx-vlm).
 */
import * as native from '@mlxcel/core-native';
import { channelsLastKernel, convKernelDims, convKernelTensor, type ConvLayout } from '@mlxcel/models-core';
import { MlxcelError, ops, Weight, type WeightStore } from '@mlxcel/tensor';

/** A channels-last feature map. */
export interface FeatureMap {
  /** [h, w, c] */
  x: Float32Array;
  h: number;
  w: number;
  c: number;
}

export type { ConvLayout };

/**
 * TF "same" padding along one axis: total = max((⌈n/s⌉ − 1)·s + k − n, 0), before = ⌊total/2⌋, the
 * rest after (stride 2 on an even map: k = 3 → (0, 1), k = 5 → (1, 2); stride 1: symmetric).
 */
export function samePadding(n: number, k: number, s: number): [number, number] {
  const total = Math.max((Math.ceil(n / s) - 1) * s + k - n, 0);
  const before = Math.floor(total / 2);
  return [before, total - before];
}

/**
 * The checkpoint's conv layout, read from its pointwise kernels ([o, i, 1, 1] torch vs [o, 1, 1, i]
 * channels-last): the stem's [64, 3, 3, 3] reads the same either way, so it follows the others.
 */
export function detectConvLayout(store: WeightStore, prefix: string): ConvLayout {
  for (const k of store.keys()) {
    if (!k.startsWith(prefix) || !k.endsWith('.weight')) continue;
    const s = store.get(k).shape;
    if (s.length !== 4) continue;
    if (s[2] === 1 && s[3] === 1 && s[1] !== 1) return 'torch';
    if (s[1] === 1 && s[2] === 1 && s[3] !== 1) return 'channels-last';
    if (s[1] === 1 && s[2]! > 1 && s[3]! > 1) return 'torch'; // depthwise [C, 1, k, k]
    if (s[3] === 1 && s[1]! > 1 && s[2]! > 1) return 'channels-last'; // depthwise [C, k, k, 1]
  }
  throw new MlxcelError('E_SHAPE', `${prefix}: no conv kernel tells the layout apart (torch [o, i, kh, kw] or channels-last [o, kh, kw, i])`);
}

export class FullConv {
  constructor(
    readonly name: string,
    /** [cout, kh·kw·cin], (kh, kw, cin) order. */
    readonly weight: Float32Array,
    readonly bias: Float32Array | null,
    readonly cin: number,
    readonly cout: number,
    readonly k: number,
    readonly stride: number,
  ) {}

  forward(m: FeatureMap): FeatureMap {
    if (m.c !== this.cin) throw new MlxcelError('E_SHAPE', `${this.name}: input has ${m.c} channels, the kernel expects ${this.cin}`);
    const [pt, pb] = samePadding(m.h, this.k, this.stride), [pl, pr] = samePadding(m.w, this.k, this.stride);
    const oh = Math.floor((m.h + pt + pb - this.k) / this.stride) + 1, ow = Math.floor((m.w + pl + pr - this.k) / this.stride) + 1;
    const out = new Float32Array(oh * ow * this.cout);
    native.conv2d({
      x: m.x, h: m.h, w: m.w, cin: this.cin, weight: this.weight, cout: this.cout, kh: this.k, kw: this.k,
      strideH: this.stride, strideW: this.stride, padTop: pt, padBottom: pb, padLeft: pl, padRight: pr, out,
    });
    if (this.bias) ops.add(out, this.bias, out);
    return { x: out, h: oh, w: ow, c: this.cout };
  }

  static load(store: WeightStore, name: string, layout: ConvLayout, stride: number, opts: { bias?: 'optional' } = {}): FullConv {
    const t = convKernelTensor(store, `${name}.weight`);
    const { cout, cin, kh, kw } = convKernelDims(t.shape, layout);
    if (kh !== kw) throw new MlxcelError('E_SHAPE', `${name}.weight: shape [${t.shape}] is not a square kernel`);
    const w = channelsLastKernel(t, layout); // [cout, kh·kw·cin]
    // Some community conversions drop the stem bias; timm builds it, so a missing one is zero.
    const bias = opts.bias && store.has(`${name}.bias`) ? store.get(`${name}.bias`).toF32() : null;
    if (bias && bias.length !== cout) throw new MlxcelError('E_SHAPE', `${name}.bias: ${bias.length} values for ${cout} output channels`);
    return new FullConv(name, w, bias, cin, cout, kh, stride);
  }
}

export class DepthwiseConv {
  constructor(
    readonly name: string,
    /** [k·k, C], tap-major. */
    readonly weight: Float32Array,
    readonly c: number,
    readonly k: number,
    readonly stride: number,
  ) {}

  forward(m: FeatureMap): FeatureMap {
    if (m.c !== this.c) throw new MlxcelError('E_SHAPE', `${this.name}: input has ${m.c} channels, the kernel expects ${this.c}`);
    const [pt, pb] = samePadding(m.h, this.k, this.stride), [pl, pr] = samePadding(m.w, this.k, this.stride);
    const oh = Math.floor((m.h + pt + pb - this.k) / this.stride) + 1, ow = Math.floor((m.w + pl + pr - this.k) / this.stride) + 1;
    const out = new Float32Array(oh * ow * this.c);
    native.dwconv2d({
      x: m.x, h: m.h, w: m.w, c: this.c, weight: this.weight, kh: this.k, kw: this.k,
      strideH: this.stride, strideW: this.stride, padTop: pt, padBottom: pb, padLeft: pl, padRight: pr, out,
    });
    return { x: out, h: oh, w: ow, c: this.c };
  }

  static load(store: WeightStore, name: string, layout: ConvLayout, stride: number): DepthwiseConv {
    const t = convKernelTensor(store, `${name}.weight`);
    const s = t.shape as [number, number, number, number];
    const torch = layout === 'torch';
    const C = s[0], k = torch ? s[2] : s[1];
    if ((torch ? s[1] : s[3]) !== 1 || (torch ? s[3] : s[2]) !== k)
      throw new MlxcelError('E_SHAPE', `${name}.weight: shape [${s}] is not a depthwise kernel (${torch ? '[C, 1, k, k]' : '[C, k, k, 1]'})`);
    const src = t.toF32();
    const w = new Float32Array(k * k * C);
    // Both layouts store channel c's k·k taps contiguously, row-major: transpose to tap-major.
    for (let c = 0; c < C; c++) for (let j = 0; j < k * k; j++) w[j * C + c] = src[c * k * k + j]!;
    return new DepthwiseConv(name, w, C, k, stride);
  }
}

export class PointwiseConv {
  constructor(readonly name: string, readonly weight: Weight) {}
  get cin(): number {
    return this.weight.cols;
  }
  get cout(): number {
    return this.weight.rows;
  }
  forward(m: FeatureMap): FeatureMap {
    if (m.c !== this.cin) throw new MlxcelError('E_SHAPE', `${this.name}: input has ${m.c} channels, the kernel expects ${this.cin}`);
    return { x: ops.matmul(m.x, m.h * m.w, this.weight), h: m.h, w: m.w, c: this.cout };
  }
  static load(store: WeightStore, name: string): PointwiseConv {
    const t = convKernelTensor(store, `${name}.weight`);
    const s = t.shape as [number, number, number, number];
    // [o, i, 1, 1] and [o, 1, 1, i] are both [o, i] in memory.
    const cin = s[2] === 1 && s[3] === 1 ? s[1] : s[3];
    if (s[1] * s[2] * s[3] !== cin) throw new MlxcelError('E_SHAPE', `${name}.weight: shape [${s}] is not a 1x1 conv kernel`);
    return new PointwiseConv(name, Weight.fromTensor(t.reshape([s[0], cin]), `${name}.weight`));
  }
}
