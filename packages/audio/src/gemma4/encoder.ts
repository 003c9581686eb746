/**
 * Gemma 4 audio encoder (HF Gemma4AudioModel, docs/architecture/audio.md §4): two Conv2d/LayerNorm/ReLU subsampling
 * blocks, input projection, conformer layers with the corrected local mask, output projection into
 * output_proj_dims; and the embedder into the text space (RMS0 then embedding_projection).
 */
import { Linear, MlxcelError, ops, RMSNorm, LayerNorm, type QuantConfig, type WeightStore } from '@mlxcel/tensor';
import { LocalRelAttention } from '../conformer/attention.js';
import { ConformerFeedForward, LightConv, loadDepthwise, maskRows } from '../conformer/blocks.js';
import { WeightLoader, ClippableLinear, clamp, linearProjection, loadConvKernel, type Projection } from '@mlxcel/models-core';
import { conv2d, type Conv2dSpec } from '../conformer/conv.js';
import { clipBound, softplus } from '../conformer/layers.js';
import { gemma4Window, type LocalWindow } from '../conformer/window.js';
import type { EncoderOutput } from '../encoder-output.js';
import type { Gemma4AudioConfig } from './config.js';

class SubsampleBlock {
  constructor(readonly spec: Conv2dSpec, readonly weight: Float32Array, readonly norm: LayerNorm) {}
  /** x [T, F, cin] with validity per time row -> [T', F', cout] and valid[::2]. */
  forward(x: Float32Array, T: number, F: number, valid: Uint8Array): { x: Float32Array; T: number; F: number; valid: Uint8Array } {
    maskRows(x, F * this.spec.cin, valid); // HF zeroes invalid frames before each conv
    const { out, outH, outW } = conv2d(x, T, F, this.weight, this.spec);
    this.norm.forward(out, this.spec.cout, out);
    ops.relu(out, out);
    const v = new Uint8Array(outH);
    for (let t = 0; t < outH; t++) v[t] = valid[2 * t] ?? 0;
    return { x: out, T: outH, F: outW, valid: v };
  }
}

class Gemma4ConformerLayer {
  constructor(
    readonly ffw1: ConformerFeedForward,
    readonly attn: LocalRelAttention,
    readonly post: Projection,
    readonly normPre: RMSNorm,
    readonly normPost: RMSNorm,
    readonly lconv: LightConv,
    readonly ffw2: ConformerFeedForward,
    readonly normOut: RMSNorm,
    readonly clip: number,
  ) {}

  forward(x: Float32Array, T: number, D: number, valid: Uint8Array, window: LocalWindow): Float32Array {
    x = this.ffw1.forward(x, T);
    let h = clamp(x, -this.clip, this.clip, new Float32Array(x.length));
    this.normPre.forward(h, D, h);
    h = this.post.forward(this.attn.forward(h, T, valid, window), T);
    clamp(h, -this.clip, this.clip);
    this.normPost.forward(h, D, h);
    x = ops.add(x, h, h);
    // HF skips this; it cannot change valid rows (causal conv, padding at the end) and keeps padded rows finite.
    maskRows(x, D, valid);
    x = this.lconv.forward(x, T);
    x = this.ffw2.forward(x, T);
    clamp(x, -this.clip, this.clip);
    return this.normOut.forward(x, D, x);
  }
}

export class Gemma4AudioEncoder {
  readonly kind = 'gemma4' as const;
  /** The model's local-attention window (HF's corrected rule); forward() can override it. */
  readonly window: LocalWindow;

  private constructor(
    readonly cfg: Gemma4AudioConfig,
    private readonly blocks: [SubsampleBlock, SubsampleBlock],
    private readonly inputProj: Linear,
    private readonly layers: Gemma4ConformerLayer[],
    private readonly outputProj: Linear,
  ) {
    this.window = gemma4Window(cfg.contextLeft, cfg.contextRight);
  }

  /** features [T, nMel], valid [T] (1 = valid) -> encoder output. */
  forward(features: Float32Array, valid: Uint8Array, opts: { window?: LocalWindow } = {}): EncoderOutput {
    const { nMel, hidden: D } = this.cfg;
    const T = valid.length;
    if (features.length !== T * nMel) throw new MlxcelError('E_SHAPE', `Gemma 4 audio encoder: features have ${features.length} values, expected ${T} x ${nMel}`);
    if (T === 0) throw new MlxcelError('E_AUDIO', 'Gemma 4 audio encoder: no mel frames');
    let s: { x: Float32Array; T: number; F: number; valid: Uint8Array } = { x: Float32Array.from(features), T, F: nMel, valid };
    for (const b of this.blocks) s = b.forward(s.x, s.T, s.F, s.valid);
    const T2 = s.T;
    const sscp = this.inputProj.forward(s.x, T2);
    const window = opts.window ?? this.window;
    let x: Float32Array = sscp.slice();
    for (const layer of this.layers) x = layer.forward(x, T2, D, s.valid, window);
    const hidden = this.outputProj.forward(x, T2);
    return { hidden, frames: T2, dim: this.cfg.outputDims, mask: s.valid, sscp, sscpFrames: T2 };
  }

  static load(store: WeightStore, prefix: string, cfg: Gemma4AudioConfig, quant?: QuantConfig): Gemma4AudioEncoder {
    const ld = new WeightLoader(store, quant); // full names: the tower prefix is part of each path
    const p = prefix;
    const D = cfg.hidden, eps = cfg.eps;
    const [c0, c1] = cfg.channels;
    const spec = (cin: number, cout: number): Conv2dSpec => ({ cin, cout, kh: 3, kw: 3, strideH: 2, strideW: 2, pad: [1, 1, 1, 1] });
    const block = (name: string, s: Conv2dSpec) =>
      new SubsampleBlock(s, loadConvKernel(store, `${p}subsample_conv_projection.${name}.conv.weight`, s), new LayerNorm(ld.vector(`${p}subsample_conv_projection.${name}.norm.weight`, s.cout), null, eps));
    const blocks: [SubsampleBlock, SubsampleBlock] = [block('layer0', spec(1, c0)), block('layer1', spec(c0, c1))];
    const fOut = Math.floor((Math.floor((cfg.nMel - 1) / 2) + 1 - 1) / 2) + 1;
    const inputProj = ld.linear(`${p}subsample_conv_projection.input_proj_linear`, [D, fOut * c1]);

    const norm = (name: string) => ld.rmsNorm(name, D, eps);
    const proj = (name: string, shape: [number, number]): Projection =>
      cfg.useClippedLinears ? ClippableLinear.load(store, name, { quant, shape }) : linearProjection(store, `${name}.linear`, { quant, shape });
    // The gradient clamp is capped at the weight dtype's max (HF: min(gradient_clipping, finfo.max)).
    const clip = clipBound(store, `${p}layers.0.feed_forward1.ffw_layer_1.linear`, cfg.gradientClipping);
    const ffw = (name: string) =>
      new ConformerFeedForward(
        norm(`${name}.pre_layer_norm`),
        proj(`${name}.ffw_layer_1`, [4 * D, D]),
        proj(`${name}.ffw_layer_2`, [D, 4 * D]),
        norm(`${name}.post_layer_norm`),
        cfg.residualWeight,
        clip,
      );
    const hd = cfg.headDim;
    const qBase = hd ** -0.5 / Math.log(2);
    const kBase = Math.log(1 + Math.E) / Math.log(2);
    // HF builds positions context_size//2 .. 0 with context_size = chunk + (left - 1) + right.
    const ctx = cfg.chunk + cfg.contextLeft - 1 + cfg.contextRight;
    const relPositions = Array.from({ length: Math.floor(ctx / 2) + 1 }, (_, i) => Math.floor(ctx / 2) - i);
    const layers: Gemma4ConformerLayer[] = [];
    for (let i = 0; i < cfg.layers; i++) {
      const l = `${p}layers.${i}`;
      const pds = ld.vector(`${l}.self_attn.per_dim_scale`, hd);
      const qScale = Float32Array.from(pds, (v) => qBase * softplus(v));
      let kScale = new Float32Array(hd).fill(kBase);
      // Older exports carry a per-channel key scale too (llama.cpp supports it; current HF has none).
      if (store.has(`${l}.self_attn.per_dim_key_scale`)) {
        const pdk = ld.vector(`${l}.self_attn.per_dim_key_scale`, hd);
        kScale = Float32Array.from(pdk, (v) => kBase * softplus(v));
      }
      const attn = new LocalRelAttention({
        q: proj(`${l}.self_attn.q_proj`, [D, D]),
        k: proj(`${l}.self_attn.k_proj`, [D, D]),
        v: proj(`${l}.self_attn.v_proj`, [D, D]),
        rel: linearProjection(store, `${l}.self_attn.relative_k_proj`, { quant, shape: [D, D] }),
        nHeads: cfg.heads, headDim: hd, qScale, kScale, relPositions,
        relDist0: cfg.contextLeft - 1, softcap: cfg.logitCap,
      });
      const { w: dw, K } = loadDepthwise(store, `${l}.lconv1d.depthwise_conv1d.weight`, D);
      if (K !== cfg.convKernel) throw new MlxcelError('E_SHAPE', `${l}.lconv1d.depthwise_conv1d.weight: kernel ${K} but conv_kernel_size is ${cfg.convKernel}`);
      const lconv = new LightConv(norm(`${l}.lconv1d.pre_layer_norm`), proj(`${l}.lconv1d.linear_start`, [2 * D, D]), dw, K, norm(`${l}.lconv1d.conv_norm`), proj(`${l}.lconv1d.linear_end`, [D, D]), clip);
      layers.push(new Gemma4ConformerLayer(
        ffw(`${l}.feed_forward1`), attn, proj(`${l}.self_attn.post`, [D, D]), norm(`${l}.norm_pre_attn`), norm(`${l}.norm_post_attn`),
        lconv, ffw(`${l}.feed_forward2`), norm(`${l}.norm_out`), clip,
      ));
    }
    const outputProj = ld.linear(`${p}output_proj`, [cfg.outputDims, D], { bias: true });
    return new Gemma4AudioEncoder(cfg, blocks, inputProj, layers, outputProj);
  }
}

/** Gemma 4 `embed_audio`: RMS0 over output_proj_dims (no weight), then embedding_projection -> text hidden. */
export class Gemma4AudioEmbedder {
  constructor(readonly projection: Linear, readonly eps: number) {}
  forward(a: Float32Array, rows: number): Float32Array {
    return this.projection.forward(ops.rmsNorm(a, this.projection.inFeatures, null, this.eps), rows);
  }
  static load(store: WeightStore, prefix: string, cfg: Gemma4AudioConfig, quant?: QuantConfig): Gemma4AudioEmbedder {
    const ld = new WeightLoader(store, quant); // full names: the tower prefix is part of each path
    return new Gemma4AudioEmbedder(ld.linear(`${prefix}embedding_projection`, [cfg.textHidden, cfg.outputDims]), cfg.eps);
  }
}
