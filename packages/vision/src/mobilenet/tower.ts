/**
 * The MobileNetV5-300M encoder (timm `mobilenetv5_300m_enc`, run by HF through TimmWrapperModel with
 * forward_features): stem, 4 stages of ER / UIR / MQA blocks, and the multi-scale fusion adapter over
 * the outputs of the last two stages, to a [16·16, C] token map. The block sequence comes from the
 * checkpoint's tensor names (a block's kind from which tensors it has) and every width from the weight
 * shapes; what the weights cannot say is the architecture's: the first block of each stage has
 * stride 2, MQA key/value paths with a down-conv use stride 2, and the adapter emits 16×16.
 */
import { MlxcelError, loadVector, type WeightStore } from '@mlxcel/tensor';
import {
  ChannelNorm, EdgeResidual, MobileAttention, MultiScaleFusion, Stem, UniversalInvertedResidual, type Block,
} from './blocks.js';
import { DepthwiseConv, FullConv, PointwiseConv, detectConvLayout, type ConvLayout, type FeatureMap } from './conv.js';

/** Output resolution of the MSFA (fixed by the architecture, not a config key). */
export const MSFA_RESOLUTION = 16;

export interface MobileNetOutput {
  /** [16·16, C] channels-last, token index y·16 + x. */
  tokens: FeatureMap;
  /** Outputs of each stage (channels-last). */
  stages: FeatureMap[];
}

export class MobileNetV5Encoder {
  private constructor(
    readonly layout: ConvLayout,
    readonly stem: Stem,
    readonly stages: Block[][],
    readonly msfa: MultiScaleFusion,
    /** Stages whose outputs feed the MSFA (the last two). */
    readonly msfaInputs: number[],
  ) {}

  get outChannels(): number {
    return this.msfa.norm.weight.length;
  }

  /** pixels [3, H, W] (planar, as the processor emits them). */
  forward(pixels: Float32Array, H: number, W: number): MobileNetOutput {
    if (pixels.length !== 3 * H * W) throw new MlxcelError('E_SHAPE', `MobileNetV5: ${pixels.length} pixel values are not 3 x ${H} x ${W}`);
    const n = H * W;
    const x = new Float32Array(n * 3);
    for (let i = 0; i < n; i++) for (let c = 0; c < 3; c++) x[3 * i + c] = pixels[c * n + i]!;
    let m = this.stem.forward({ x, h: H, w: W, c: 3 });
    const outs: FeatureMap[] = [];
    for (const stage of this.stages) {
      for (const b of stage) m = b.forward(m);
      outs.push(m);
    }
    return { tokens: this.msfa.forward(this.msfaInputs.map((i) => outs[i]!)), stages: outs };
  }

  static load(store: WeightStore, prefix: string): MobileNetV5Encoder {
    const p = prefix;
    const layout = detectConvLayout(store, p);
    const stem = new Stem(FullConv.load(store, `${p}conv_stem.conv`, layout, 2, { bias: 'optional' }), ChannelNorm.load(store, `${p}conv_stem.bn`));
    // blocks.S.I.* -> the set of (stage, index) in the checkpoint.
    const idx = new Map<number, Set<number>>();
    for (const k of store.keys()) {
      const mm = k.startsWith(p) ? /^blocks\.(\d+)\.(\d+)\./.exec(k.slice(p.length)) : null;
      if (!mm) continue;
      const s = Number(mm[1]), i = Number(mm[2]);
      if (!idx.has(s)) idx.set(s, new Set());
      idx.get(s)!.add(i);
    }
    const nStages = idx.size;
    if (nStages < 2) throw new MlxcelError('E_MISSING_TENSOR', `${p}blocks.*: found ${nStages} stage(s); MobileNetV5 has 4`);
    const stages: Block[][] = [];
    for (let s = 0; s < nStages; s++) {
      const set = idx.get(s);
      if (!set) throw new MlxcelError('E_MISSING_TENSOR', `${p}blocks.${s}.*: stage ${s} is missing`);
      const n = Math.max(...set) + 1;
      const blocks: Block[] = [];
      for (let i = 0; i < n; i++) {
        if (!set.has(i)) throw new MlxcelError('E_MISSING_TENSOR', `${p}blocks.${s}.${i}.*: block missing`);
        blocks.push(loadBlock(store, `${p}blocks.${s}.${i}.`, layout, i === 0 ? 2 : 1));
      }
      stages.push(blocks);
    }
    const f = `${p}msfa.`;
    const pw = (name: string) => ({ conv: PointwiseConv.load(store, `${f}ffn.${name}.conv`), norm: ChannelNorm.load(store, `${f}ffn.${name}.bn`) });
    const msfa = new MultiScaleFusion(pw('pw_exp'), pw('pw_proj'), ChannelNorm.load(store, `${f}norm`), MSFA_RESOLUTION);
    return new MobileNetV5Encoder(layout, stem, stages, msfa, [nStages - 2, nStages - 1]);
  }
}

function loadBlock(store: WeightStore, b: string, layout: ConvLayout, stride: number): Block {
  const name = b.slice(0, -1);
  const convNorm = <T>(conv: T, n: string) => ({ conv, norm: ChannelNorm.load(store, n) });
  if (store.has(`${b}conv_exp.weight`))
    return new EdgeResidual(
      name,
      FullConv.load(store, `${b}conv_exp`, layout, stride),
      ChannelNorm.load(store, `${b}bn1`),
      PointwiseConv.load(store, `${b}conv_pwl`),
      ChannelNorm.load(store, `${b}bn2`),
    );
  if (store.has(`${b}attn.query.proj.weight`)) return MobileAttention.load(store, b, layout);
  if (store.has(`${b}pw_exp.conv.weight`)) {
    const hasMid = store.has(`${b}dw_mid.conv.weight`);
    // timm: the stride sits on dw_mid when the block has one, else on dw_start.
    const dwStart = store.has(`${b}dw_start.conv.weight`)
      ? convNorm(DepthwiseConv.load(store, `${b}dw_start.conv`, layout, hasMid ? 1 : stride), `${b}dw_start.bn`)
      : null;
    const dwMid = hasMid ? convNorm(DepthwiseConv.load(store, `${b}dw_mid.conv`, layout, stride), `${b}dw_mid.bn`) : null;
    if (stride !== 1 && !dwStart && !dwMid) throw new MlxcelError('E_SHAPE', `${name}: a stride-2 block without a depthwise conv`);
    const pwExp = convNorm(PointwiseConv.load(store, `${b}pw_exp.conv`), `${b}pw_exp.bn`);
    const pwProj = convNorm(PointwiseConv.load(store, `${b}pw_proj.conv`), `${b}pw_proj.bn`);
    const gamma = store.has(`${b}layer_scale.gamma`) ? loadVector(store, `${b}layer_scale.gamma`, pwProj.conv.cout) : null;
    return new UniversalInvertedResidual(name, dwStart, pwExp, dwMid, pwProj, gamma, true);
  }
  throw new MlxcelError('E_MISSING_TENSOR', `${name}: neither an EdgeResidual (conv_exp), a UIR (pw_exp) nor an attention block (attn.query)`);
}
