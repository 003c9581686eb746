/**
 * MobileNetV5 blocks (timm _efficientnet_blocks.py / attention2d.py / mobilenetv5.py) on channels-last
 * maps. Every conv is followed by its own RmsNorm2d (over channels, ε 1e-6, weight as is, f32
 * accumulation), "NormAct" adds GELU (tanh). Layer scale multiplies the branch before the residual add.
 */
import * as native from '@mlxcel/core-native';
import { MlxcelError, ops, loadVector, type WeightStore } from '@mlxcel/tensor';
import { DepthwiseConv, FullConv, PointwiseConv, type ConvLayout, type FeatureMap } from './conv.js';

/** timm's RmsNorm2d ε (the tower ignores vision_config.rms_norm_eps). */
export const RMS2D_EPS = 1e-6;

export class ChannelNorm {
  constructor(readonly name: string, readonly weight: Float32Array) {}
  /** In place; GELU(tanh) after the norm when `act`. */
  forward(m: FeatureMap, act: boolean): FeatureMap {
    if (m.c !== this.weight.length) throw new MlxcelError('E_SHAPE', `${this.name}: ${this.weight.length} weights for ${m.c} channels`);
    ops.rmsNorm(m.x, m.c, this.weight, RMS2D_EPS, false, m.x);
    if (act) ops.geluTanh(m.x, m.x);
    return m;
  }
  static load(store: WeightStore, name: string, dim?: number): ChannelNorm {
    return new ChannelNorm(name, loadVector(store, `${name}.weight`, dim));
  }
}

export interface Block {
  readonly name: string;
  forward(m: FeatureMap): FeatureMap;
}

function residual(x: FeatureMap, y: FeatureMap): FeatureMap {
  ops.add(y.x, x.x, y.x);
  return y;
}

function layerScale(y: FeatureMap, gamma: Float32Array | null): void {
  if (gamma) ops.mul(y.x, gamma, y.x);
}

/** Stem: conv 3×3 s2 with bias → RN → GELU. */
export class Stem implements Block {
  readonly name = 'conv_stem';
  constructor(readonly conv: FullConv, readonly norm: ChannelNorm) {}
  forward(m: FeatureMap): FeatureMap {
    return this.norm.forward(this.conv.forward(m), true);
  }
}

/** EdgeResidual: GELU(RN(conv_k×k,s)) → RN(pw); + x iff stride 1 and Cin = Cout. */
export class EdgeResidual implements Block {
  constructor(readonly name: string, readonly convExp: FullConv, readonly bn1: ChannelNorm, readonly convPwl: PointwiseConv, readonly bn2: ChannelNorm) {}
  forward(x: FeatureMap): FeatureMap {
    const y = this.bn2.forward(this.convPwl.forward(this.bn1.forward(this.convExp.forward(x), true)), false);
    return this.convExp.stride === 1 && x.c === y.c ? residual(x, y) : y;
  }
}

/** UniversalInvertedResidual: [RN(dw_start)] → GELU(RN(pw_exp)) → [GELU(RN(dw_mid))] → RN(pw_proj) → γ; + x iff stride 1, Cin = Cout. */
export class UniversalInvertedResidual implements Block {
  constructor(
    readonly name: string,
    readonly dwStart: { conv: DepthwiseConv; norm: ChannelNorm } | null,
    readonly pwExp: { conv: PointwiseConv; norm: ChannelNorm },
    readonly dwMid: { conv: DepthwiseConv; norm: ChannelNorm } | null,
    readonly pwProj: { conv: PointwiseConv; norm: ChannelNorm },
    readonly gamma: Float32Array | null,
    readonly skip: boolean,
  ) {}
  get stride(): number {
    return (this.dwMid?.conv.stride ?? 1) * (this.dwStart?.conv.stride ?? 1);
  }
  forward(x: FeatureMap): FeatureMap {
    let y = x;
    if (this.dwStart) y = this.dwStart.norm.forward(this.dwStart.conv.forward(y), false);
    y = this.pwExp.norm.forward(this.pwExp.conv.forward(y), true);
    if (this.dwMid) y = this.dwMid.norm.forward(this.dwMid.conv.forward(y), true);
    y = this.pwProj.norm.forward(this.pwProj.conv.forward(y), false);
    layerScale(y, this.gamma);
    return this.skip && this.stride === 1 && x.c === y.c ? residual(x, y) : y;
  }
}

/** One key or value path of MultiQueryAttention2d: [RN(dw 3×3 s2)] → pw. */
class KvPath {
  constructor(readonly down: { conv: DepthwiseConv; norm: ChannelNorm } | null, readonly proj: PointwiseConv) {}
  forward(n: FeatureMap): FeatureMap {
    const y = this.down ? this.down.norm.forward(this.down.conv.forward(n), false) : n;
    return this.proj.forward(y);
  }
}

/**
 * MobileAttention with MultiQueryAttention2d: n = RN(x); q = pw(n) as [hw, heads, kd] (channel
 * head·kd + j); one key and one value head shared by all query heads, optionally from a stride-2
 * depthwise down-conv; softmax(q kᵀ / √kd) v in f32 without mask; heads concatenated → pw → γ → + x.
 */
export class MobileAttention implements Block {
  constructor(
    readonly name: string,
    readonly norm: ChannelNorm,
    readonly query: PointwiseConv,
    readonly key: KvPath,
    readonly value: KvPath,
    readonly output: PointwiseConv,
    readonly gamma: Float32Array | null,
    readonly heads: number,
  ) {}

  forward(x: FeatureMap): FeatureMap {
    const n = this.norm.forward({ ...x, x: x.x.slice() }, false);
    const q = this.query.forward(n);
    const k = this.key.forward(n), v = this.value.forward(n);
    const kd = k.c, vd = v.c, M = x.h * x.w, Mk = k.h * k.w;
    const out = new Float32Array(M * this.heads * vd);
    const kPos = new Int32Array(Mk);
    for (let i = 0; i < Mk; i++) kPos[i] = i;
    native.attention({
      q: q.x, nQ: M, nHeads: this.heads, headDim: kd, vDim: vd, qPos: new Int32Array(M),
      k: k.x, v: v.x, kvDtype: 0, nKv: Mk, nKvHeads: 1, kPos, scale: 1 / Math.sqrt(kd), causal: false, out,
    });
    const y = this.output.forward({ x: out, h: x.h, w: x.w, c: this.heads * vd });
    layerScale(y, this.gamma);
    return residual(x, y);
  }

  static load(store: WeightStore, p: string, layout: ConvLayout): MobileAttention {
    const kv = (which: 'key' | 'value'): KvPath => {
      const down = store.has(`${p}attn.${which}.down_conv.weight`)
        ? { conv: DepthwiseConv.load(store, `${p}attn.${which}.down_conv`, layout, 2), norm: ChannelNorm.load(store, `${p}attn.${which}.norm`) }
        : null;
      return new KvPath(down, PointwiseConv.load(store, `${p}attn.${which}.proj`));
    };
    const query = PointwiseConv.load(store, `${p}attn.query.proj`);
    const key = kv('key'), value = kv('value');
    const kd = key.proj.cout, vd = value.proj.cout;
    if (query.cout % kd) throw new MlxcelError('E_SHAPE', `${p}attn.query.proj: ${query.cout} outputs are not a multiple of the key dim ${kd}`);
    const heads = query.cout / kd;
    const output = PointwiseConv.load(store, `${p}attn.output.proj`);
    if (output.cin !== heads * vd) throw new MlxcelError('E_SHAPE', `${p}attn.output.proj: ${output.cin} inputs, expected ${heads} heads x ${vd}`);
    const gamma = store.has(`${p}layer_scale.gamma`) ? loadVector(store, `${p}layer_scale.gamma`, output.cout) : null;
    return new MobileAttention(p.slice(0, -1), ChannelNorm.load(store, `${p}norm`, query.cin), query, key, value, output, gamma, heads);
  }
}

/**
 * MobileNetV5MultiScaleFusionAdapter (huggingface/pytorch-image-models `timm/models/mobilenetv5.py`,
 * `MobileNetV5MultiScaleFusionAdapter.forward`): inputs smaller than the first are upsampled (nearest,
 * src = ⌊dst·in/out⌋), concatenated on channels, FFN GELU(RN(pw_exp)) → RN(pw_proj), then brought to
 * the output resolution — average-pooled (kernel = stride = size / out) when both sides are multiples
 * of it, else resized bilinearly (align_corners = false, no antialias) — and RN(norm), always.
 */
export class MultiScaleFusion {
  constructor(
    readonly pwExp: { conv: PointwiseConv; norm: ChannelNorm },
    readonly pwProj: { conv: PointwiseConv; norm: ChannelNorm },
    readonly norm: ChannelNorm,
    readonly outSize: number,
  ) {}

  forward(inputs: FeatureMap[]): FeatureMap {
    const hi = inputs[0]!;
    const H = hi.h, W = hi.w;
    const maps = inputs.map((m) => (m.h < H || m.w < W ? upsampleNearest(m, H, W) : m));
    let C = 0;
    for (const m of maps) {
      if (m.h !== H || m.w !== W) throw new MlxcelError('E_SHAPE', `MSFA: a ${m.h}x${m.w} input does not match the first input's ${H}x${W}`);
      C += m.c;
    }
    const cat = new Float32Array(H * W * C);
    for (let i = 0; i < H * W; i++) {
      let off = i * C;
      for (const m of maps) {
        cat.set(m.x.subarray(i * m.c, (i + 1) * m.c), off);
        off += m.c;
      }
    }
    let y: FeatureMap = { x: cat, h: H, w: W, c: C };
    y = this.pwExp.norm.forward(this.pwExp.conv.forward(y), true);
    y = this.pwProj.norm.forward(this.pwProj.conv.forward(y), false);
    if (H !== this.outSize || W !== this.outSize) {
      y = H % this.outSize || W % this.outSize
        ? resizeBilinear(y, this.outSize, this.outSize) // [out, out, C]
        : avgPool(y, H / this.outSize, W / this.outSize); // [out, out, C]
    }
    return this.norm.forward(y, false);
  }
}

/** Nearest upsampling [h, w, C] → [H, W, C] (PyTorch `nearest`: src = ⌊dst · in / out⌋; native resizeNearest2d). */
export function upsampleNearest(m: FeatureMap, H: number, W: number): FeatureMap {
  const out = new Float32Array(H * W * m.c);
  native.resizeNearest2d({ x: m.x, h: m.h, w: m.w, c: m.c, outH: H, outW: W, out });
  return { x: out, h: H, w: W, c: m.c };
}

/** Bilinear resize [h, w, C] → [H, W, C] (PyTorch `bilinear`, align_corners = false, no antialias; native resizeBilinear2d). */
export function resizeBilinear(m: FeatureMap, H: number, W: number): FeatureMap {
  const out = new Float32Array(H * W * m.c);
  native.resizeBilinear2d({ x: m.x, h: m.h, w: m.w, c: m.c, outH: H, outW: W, out });
  return { x: out, h: H, w: W, c: m.c };
}

/** Average pool [h, w, C] → [h/kh, w/kw, C], kernel = stride = (kh, kw) dividing the map, no padding (native avgPool2d). */
export function avgPool(m: FeatureMap, kh: number, kw: number): FeatureMap {
  const oh = m.h / kh, ow = m.w / kw;
  if (!Number.isInteger(oh) || !Number.isInteger(ow))
    throw new MlxcelError('E_SHAPE', `avgPool: the kernel ${kh}x${kw} does not divide the ${m.h}x${m.w} map`);
  const out = new Float32Array(oh * ow * m.c);
  native.avgPool2d({ x: m.x, h: m.h, w: m.w, c: m.c, kh, kw, out });
  return { x: out, h: oh, w: ow, c: m.c };
}
