/**
 * The Gemma 4 text model (gemma4.md §4–§10): embed → [PLE] → layers → norm → head → soft-cap.
 * Serves `gemma4` (multimodal checkpoints; towers ignored, multimodal rows arrive as embedding
 * overrides) and `gemma4_text`; dense, MoE and E-series (per-layer inputs, KV sharing) alike.
 * The residual stream, attention scores and router logits stay f32 whatever the stored dtype (§11).
 */
import { ops, type ForwardOptions, type LanguageModel, type StateOptions } from '@mlxcel/tensor';
import { layoutBatch, type BatchLayout, type GemmaForwardInput } from '../common/batch.js';
import { embedBatch } from '../common/embed.js';
import { LmHead } from '../common/head.js';
import { splitPerLayer } from '../common/ple.js';
import { GemmaState, type CacheLayout } from '../common/state.js';
import type { Gemma4Config } from './config.js';
import type { Gemma4Layer, Gemma4Weights } from './weights.js';

export class Gemma4Model implements LanguageModel {
  readonly modelType: string;
  readonly vocabSize: number;
  readonly numLayers: number;
  readonly hiddenSize: number;
  readonly maxContext: number;
  readonly prefillChunk = 256;
  readonly stats: { parameters: number; weightBytes: number };
  /** Config / checkpoint oddities found at load (absent layer_types, KV-head rule fallbacks). */
  readonly warnings: readonly string[];
  private readonly head: LmHead;
  private readonly cacheLayout: CacheLayout;

  constructor(readonly config: Readonly<Record<string, unknown>>, readonly cfg: Gemma4Config, readonly w: Gemma4Weights) {
    this.modelType = cfg.modelType;
    this.vocabSize = cfg.vocabSize;
    this.numLayers = cfg.numLayers;
    this.hiddenSize = cfg.hiddenSize;
    this.maxContext = cfg.maxPositionEmbeddings;
    this.warnings = w.warnings;
    this.head = new LmHead(w.norm, w.head, cfg.finalLogitSoftcapping);
    this.stats = { parameters: w.tally.parameters, weightBytes: w.tally.weightBytes };
    this.cacheLayout = {
      types: cfg.layerTypes,
      nKvHeads: w.numKvHeads,
      headDims: cfg.headDims,
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

  /** The PLE token component of `ids` (E-series only; null otherwise). */
  perLayerTokenInputs(ids: Int32Array, overriddenRows?: Int32Array): Float32Array | null {
    return this.w.ple ? this.w.ple.tokenComponent(ids, overriddenRows) : null;
  }

  forward(batch: GemmaForwardInput[], opts: ForwardOptions = {}): Float32Array[] {
    const b = layoutBatch(batch, this.isState);
    const { numLayers: NL, hiddenSizePerLayerInput: P } = this.cfg;
    let x = embedBatch(this.w.embed, b);
    const ple = this.w.ple ? splitPerLayer(this.w.ple.forward(x, b), b.n, NL, P) : null;
    this.w.layers.forEach((layer, l) => {
      x = this.layer(layer, l, x, ple ? ple[l]! : null, b);
    });
    const logits = this.head.forward(x, b, opts.logits ?? 'all');
    for (const s of b.seqs) s.state.advance(s.len);
    return logits;
  }

  /** One decoder layer (§8). */
  private layer(L: Gemma4Layer, l: number, x: Float32Array, pleL: Float32Array | null, b: BatchLayout): Float32Array {
    const H = this.cfg.hiddenSize, N = b.n;
    const attn = L.attn.forward(L.inputNorm.forward(x, H), b, b.seqs.map((s) => s.state.caches[l]!));
    const h = ops.add(x, L.postAttnNorm.forward(attn, H, attn), attn);

    let m: Float32Array;
    if (L.moe) m = L.moe.forward(h, N, L.mlp, L.preFfNorm, L.postFfNorm);
    else {
      m = L.mlp.forward(L.preFfNorm.forward(h, H), N);
      L.postFfNorm.forward(m, H, m);
    }
    ops.add(h, m, h);

    if (L.pli && pleL) {
      const g = L.pli.gate.forward(h, N);
      ops.geluTanh(g, g);
      ops.mul(g, pleL, g);
      const v = L.pli.projection.forward(g, N);
      ops.add(h, L.pli.norm.forward(v, H, v), h);
    }
    if (L.layerScalar !== 1) ops.scale(h, L.layerScalar, 0, h);
    return h;
  }
}
