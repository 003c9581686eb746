/**
 * Gemma 3n audio encoder (HF Gemma3nAudioEncoder, docs/architecture/audio.md §3): subsampler, input projection,
 * conformer blocks with the inclusive local window (0 <= t - s <= 12), stride-`reduction` frame
 * reduction; and the multimodal embedder (soft path for encoder frames, hard path for audio token ids).
 */
import { Linear, MlxcelError, ops, RMSNorm, type QuantConfig, type WeightStore } from '@mlxcel/tensor';
import { LocalRelAttention } from '../conformer/attention.js';
import { ConformerFeedForward, LightConv, loadDepthwise, maskRows } from '../conformer/blocks.js';
import { WeightLoader, clamp, linearProjection, type Projection } from '@mlxcel/models-core';
import { clipBound, softplus } from '../conformer/layers.js';
import { inclusiveWindow, type LocalWindow } from '../conformer/window.js';
import type { EncoderOutput } from '../encoder-output.js';
import type { Gemma3nAudioConfig } from './config.js';
import { Gemma3nSubsampler } from './sscp.js';

class Gemma3nConformerBlock {
  constructor(
    readonly ffwStart: ConformerFeedForward,
    readonly preAttnNorm: RMSNorm,
    readonly attn: LocalRelAttention,
    readonly post: Projection,
    readonly postNorm: RMSNorm,
    readonly lconv: LightConv,
    readonly ffwEnd: ConformerFeedForward,
    readonly norm: RMSNorm,
    readonly clip: number,
  ) {}

  forward(x: Float32Array, T: number, D: number, valid: Uint8Array, window: LocalWindow): Float32Array {
    x = this.ffwStart.forward(x, T);
    let h = clamp(x, -this.clip, this.clip, new Float32Array(x.length));
    this.preAttnNorm.forward(h, D, h);
    h = this.post.forward(this.attn.forward(h, T, valid, window), T);
    clamp(h, -this.clip, this.clip);
    this.postNorm.forward(h, D, h);
    x = ops.add(x, h, h);
    maskRows(x, D, valid); // the reference zeroes padded frames before the light conv
    x = this.lconv.forward(x, T);
    x = this.ffwEnd.forward(x, T);
    clamp(x, -this.clip, this.clip);
    return this.norm.forward(x, D, x);
  }
}

export class Gemma3nAudioEncoder {
  readonly kind = 'gemma3n' as const;
  /** Gemma 3n's inclusive window (13 keys incl. the query); forward() can override it. */
  readonly window: LocalWindow;

  private constructor(
    readonly cfg: Gemma3nAudioConfig,
    private readonly sscp: Gemma3nSubsampler,
    private readonly inputProj: Linear,
    private readonly blocks: Gemma3nConformerBlock[],
  ) {
    this.window = inclusiveWindow(cfg.contextLeft, cfg.contextRight);
  }

  /** features [T, nMel], valid [T] (1 = valid) -> reduced encoder frames (padded ones zeroed). */
  forward(features: Float32Array, valid: Uint8Array, opts: { window?: LocalWindow } = {}): EncoderOutput {
    const { nMel, hidden: D, reductionFactor: r } = this.cfg;
    const T = valid.length;
    if (features.length !== T * nMel) throw new MlxcelError('E_SHAPE', `Gemma 3n audio encoder: features have ${features.length} values, expected ${T} x ${nMel}`);
    if (T === 0) throw new MlxcelError('E_AUDIO', 'Gemma 3n audio encoder: no mel frames');
    const s = this.sscp.forward(features, T, nMel);
    const T2 = s.T;
    const sscp = this.inputProj.forward(s.x, T2);
    // Sub-sampled validity: the mel frame at the start of each output frame's receptive field.
    const stride = this.cfg.strides[0][0] * this.cfg.strides[1][0];
    const valid2 = new Uint8Array(T2);
    for (let j = 0; j < T2; j++) valid2[j] = valid[Math.min(j * stride, T - 1)]!;
    const window = opts.window ?? this.window;
    let x: Float32Array = sscp.slice();
    for (const b of this.blocks) x = b.forward(x, T2, D, valid2, window);
    const T3 = Math.ceil(T2 / r);
    const hidden = new Float32Array(T3 * D);
    const mask = new Uint8Array(T3);
    for (let j = 0; j < T3; j++) {
      mask[j] = valid2[j * r]!;
      if (mask[j]) hidden.set(x.subarray(j * r * D, (j * r + 1) * D), j * D);
    }
    return { hidden, frames: T3, dim: D, mask, sscp, sscpFrames: T2 };
  }

  static load(store: WeightStore, prefix: string, cfg: Gemma3nAudioConfig, quant?: QuantConfig): Gemma3nAudioEncoder {
    const ld = new WeightLoader(store, quant); // full names: the tower prefix is part of each path
    const p = prefix;
    const D = cfg.hidden, hd = cfg.headDim;
    const sscp = Gemma3nSubsampler.load(store, p, cfg);
    const inputProj = ld.linear(`${p}subsample_conv_projection.input_proj_linear`, [D, sscp.fOut * cfg.channels[1]]);
    const norm = (name: string) => ld.rmsNorm(name, D, cfg.eps);
    const lin = (name: string, shape: [number, number]) => linearProjection(store, name, { quant, shape });
    const clip = clipBound(store, `${p}conformer.0.ffw_layer_start.ffw_layer_1`, cfg.gradientClipping);
    const ffw = (name: string) =>
      new ConformerFeedForward(norm(`${name}.pre_layer_norm`), lin(`${name}.ffw_layer_1`, [4 * D, D]), lin(`${name}.ffw_layer_2`, [D, 4 * D]), norm(`${name}.post_layer_norm`), cfg.residualWeight, clip);
    const P = Math.max(0, cfg.contextLeft - 1), F = cfg.contextRight;
    const relPositions = Array.from({ length: P + F + 1 }, (_, i) => P - i);
    const qBase = hd ** -0.5 / Math.log(2); // q_scale = hd^-0.5 / softplus(0)
    const blocks: Gemma3nConformerBlock[] = [];
    for (let i = 0; i < cfg.layers; i++) {
      const b = `${p}conformer.${i}`;
      const pds = ld.vector(`${b}.attention.attn.per_dim_scale`, hd);
      const attn = new LocalRelAttention({
        q: lin(`${b}.attention.attn.q_proj`, [D, D]),
        k: lin(`${b}.attention.attn.k_proj`, [D, D]),
        v: lin(`${b}.attention.attn.v_proj`, [D, D]),
        rel: lin(`${b}.attention.attn.relative_position_embedding.pos_proj`, [D, D]),
        nHeads: cfg.heads, headDim: hd,
        qScale: Float32Array.from(pds, (v) => qBase * softplus(v)), kScale: null,
        relPositions, relDist0: P, softcap: cfg.logitCap,
      });
      const { w: dw, K } = loadDepthwise(store, `${b}.lconv1d.depthwise_conv1d.weight`, D);
      if (K !== cfg.convKernel) throw new MlxcelError('E_SHAPE', `${b}.lconv1d.depthwise_conv1d.weight: kernel ${K} but conf_conv_kernel_size is ${cfg.convKernel}`);
      const lconv = new LightConv(norm(`${b}.lconv1d.pre_layer_norm`), lin(`${b}.lconv1d.linear_start`, [2 * D, D]), dw, K, norm(`${b}.lconv1d.conv_norm`), lin(`${b}.lconv1d.linear_end`, [D, D]), clip);
      blocks.push(new Gemma3nConformerBlock(
        ffw(`${b}.ffw_layer_start`), norm(`${b}.attention.pre_attn_norm`), attn, lin(`${b}.attention.post`, [D, D]), norm(`${b}.attention.post_norm`),
        lconv, ffw(`${b}.ffw_layer_end`), norm(`${b}.norm`), clip,
      ));
    }
    return new Gemma3nAudioEncoder(cfg, sscp, inputProj, blocks);
  }
}

/**
 * Gemma 3n `embed_audio` (Gemma3nMultimodalEmbedder): soft rows RMS0(W . softNorm(a)); hard token rows
 * RMS0(W . hardNorm(embedding[id - vocabOffset])). Neither is scaled by sqrt(H) (docs/architecture/gemma3n.md §12).
 */
export class Gemma3nAudioEmbedder {
  constructor(
    readonly table: Float32Array,
    readonly hardNorm: RMSNorm,
    readonly softNorm: RMSNorm,
    readonly projection: Linear,
    readonly cfg: Gemma3nAudioConfig,
  ) {}

  soft(a: Float32Array, rows: number): Float32Array {
    const D = this.projection.inFeatures;
    return ops.rmsNorm(this.projection.forward(this.softNorm.forward(a, D), rows), this.cfg.textHidden, null, this.cfg.eps);
  }

  /** Embeddings of hard audio token ids (vocabOffset <= id < vocabOffset + vocabSize). */
  hard(ids: ArrayLike<number>): Float32Array {
    const D = this.projection.inFeatures, n = ids.length;
    const rows = new Float32Array(n * D);
    for (let i = 0; i < n; i++) {
      const r = ids[i]! - this.cfg.vocabOffset;
      if (!(r >= 0 && r < this.cfg.vocabSize))
        throw new MlxcelError('E_TOKEN', `Gemma 3n audio embedder: id ${ids[i]} is not an audio token (${this.cfg.vocabOffset}..${this.cfg.vocabOffset + this.cfg.vocabSize - 1})`);
      rows.set(this.table.subarray(r * D, (r + 1) * D), i * D);
    }
    return ops.rmsNorm(this.projection.forward(this.hardNorm.forward(rows, D), n), this.cfg.textHidden, null, this.cfg.eps);
  }

  static load(store: WeightStore, prefix: string, cfg: Gemma3nAudioConfig, quant?: QuantConfig): Gemma3nAudioEmbedder {
    const ld = new WeightLoader(store, quant); // full names: the tower prefix is part of each path
    const D = cfg.hidden;
    // Linear.load reads float or MLX-quantized tables alike; the table is small, keep it as f32.
    const tab = Linear.load(store, `${prefix}embedding`, { quant }).weight;
    if (tab.rows !== cfg.vocabSize || tab.cols !== D)
      throw new MlxcelError('E_SHAPE', `${prefix}embedding.weight: [${tab.rows}, ${tab.cols}] but audio_config implies [${cfg.vocabSize}, ${D}]`);
    const table = tab.dequantize();
    const projection = ld.linear(`${prefix}embedding_projection`, [cfg.textHidden, D]);
    return new Gemma3nAudioEmbedder(table, ld.rmsNorm(`${prefix}hard_embedding_norm`, D, cfg.eps), ld.rmsNorm(`${prefix}soft_embedding_norm`, D, cfg.eps), projection, cfg);
  }
}
