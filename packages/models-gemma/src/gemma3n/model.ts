/**
 * The Gemma 3n text model (gemma3n.md §3): embed → PLE → AltUp expand → layers → AltUp collapse →
 * norm → tied head → soft-cap. Serves `gemma3n` (multimodal checkpoints; towers ignored, multimodal
 * rows arrive as embedding overrides) and `gemma3n_text`.
 */
import { ops, type ForwardOptions, type LanguageModel, type StateOptions } from '@mlxcel/tensor';
import { layoutBatch, type BatchLayout, type GemmaForwardInput } from '../common/batch.js';
import { embedBatch } from '../common/embed.js';
import { LmHead } from '../common/head.js';
import { splitPerLayer } from '../common/ple.js';
import { GemmaState, type CacheLayout } from '../common/state.js';
import { altupCollapse, altupExpand } from './altup.js';
import type { Gemma3nConfig } from './config.js';
import type { Gemma3nLayer, Gemma3nWeights } from './weights.js';

export class Gemma3nModel implements LanguageModel {
  readonly modelType: string;
  readonly vocabSize: number;
  readonly numLayers: number;
  readonly hiddenSize: number;
  readonly maxContext: number;
  readonly prefillChunk = 256;
  readonly stats: { parameters: number; weightBytes: number };
  private readonly head: LmHead;
  private readonly cacheLayout: CacheLayout;

  constructor(readonly config: Readonly<Record<string, unknown>>, readonly cfg: Gemma3nConfig, readonly w: Gemma3nWeights) {
    this.modelType = cfg.modelType;
    this.vocabSize = cfg.vocabSize;
    this.numLayers = cfg.numLayers;
    this.hiddenSize = cfg.hiddenSize;
    this.maxContext = cfg.maxPositionEmbeddings;
    this.head = new LmHead(w.norm, w.head, cfg.finalLogitSoftcapping);
    this.stats = { parameters: w.tally.parameters, weightBytes: w.tally.weightBytes };
    this.cacheLayout = {
      types: cfg.layerTypes,
      nKvHeads: cfg.layerTypes.map(() => cfg.numKvHeads),
      headDims: cfg.layerTypes.map(() => cfg.headDim),
      slidingWindow: cfg.slidingWindow,
      sources: cfg.kvSources,
    };
  }

  newState(opts?: StateOptions): GemmaState {
    return new GemmaState(this.cacheLayout, opts);
  }

  suppressedTokenIds(): Int32Array {
    return new Int32Array(0);
  }

  private isState = (s: unknown): s is GemmaState => s instanceof GemmaState && s.layout === this.cacheLayout;

  /** The PLE token component of `ids` (what a multimodal front-end may pass as `perLayerInputs`). */
  perLayerTokenInputs(ids: Int32Array, overriddenRows?: Int32Array): Float32Array {
    return this.w.ple.tokenComponent(ids, overriddenRows);
  }

  forward(batch: GemmaForwardInput[], opts: ForwardOptions = {}): Float32Array[] {
    const b = layoutBatch(batch, this.isState);
    const { hiddenSize: H, numLayers: NL, hiddenSizePerLayerInput: P } = this.cfg;
    const N = b.n;
    const e = embedBatch(this.w.embed, b);
    const ple = splitPerLayer(this.w.ple.forward(e, b), N, NL, P);
    let X = altupExpand(e, N, H, this.w.altupProjections);
    this.w.layers.forEach((layer, l) => {
      X = this.layer(layer, l, X, ple[l]!, b);
    });
    const h = altupCollapse(X, N, H, this.w.altupUnembed);
    const logits = this.head.forward(h, b, opts.logits ?? 'all');
    for (const s of b.seqs) s.state.advance(s.len);
    return logits;
  }

  /** One decoder layer over the K streams (gemma3n.md §7). */
  private layer(L: Gemma3nLayer, l: number, X: Float32Array[], pleL: Float32Array, b: BatchLayout): Float32Array[] {
    const H = this.cfg.hiddenSize, N = b.n;
    const pred = L.altup.predict(X, N);
    const act = pred[0]!;
    const xn = L.inputNorm.forward(act, H);

    // Laurel: xn + RMSNorm(R(L(xn))) (§7.2).
    const lr = L.laurelRight.forward(L.laurelLeft.forward(xn, N), N);
    const laurel = ops.add(xn, L.postLaurelNorm.forward(lr, H, lr));

    const attn = L.attn.forward(xn, b, b.seqs.map((s) => s.state.caches[l]!));
    L.postAttnNorm.forward(attn, H, attn);
    // s = (act + att + laurel) / sqrt(2)
    const s = ops.add(ops.add(act, attn, attn), laurel, attn);
    ops.scale(s, Math.SQRT1_2, 0, s);

    const m = L.mlp.forward(L.preFfNorm.forward(s, H), N);
    const y = ops.add(s, L.postFfNorm.forward(m, H, m), m);

    const corr = L.altup.correct(pred, y, N);
    // Per-layer input injection (§7.4): v = RMSNorm(W_proj (gelu(W_g f) ⊙ ple_l)), added to streams 1..K−1.
    const g = L.pliGate.forward(L.altup.scaledActive(corr), N);
    ops.geluTanh(g, g);
    ops.mul(g, pleL, g);
    const v = L.pliProjection.forward(g, N);
    L.postPliNorm.forward(v, H, v);
    for (let k = 1; k < corr.length; k++) ops.add(corr[k]!, v, corr[k]!);
    return corr;
  }
}
