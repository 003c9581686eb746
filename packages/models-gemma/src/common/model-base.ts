/**
 * The LanguageModel skeleton shared by Gemma 3n and Gemma 4: identity fields, the KV cache layout,
 * states, and forward = lay out the batch → the architecture's hidden rows → norm + head (+ soft-cap)
 * → advance each state. Each architecture supplies `hidden` (embedding, per-layer inputs, layers).
 */
import type { ForwardOptions, LanguageModel, Linear, RMSNorm, StateOptions } from '@mlxcel/tensor';
import { layoutBatch, type BatchLayout, type GemmaForwardInput } from './batch.js';
import { LmHead } from './head.js';
import type { LayerType } from './layer-types.js';
import { GemmaState, type CacheLayout } from './state.js';

/** The config fields the skeleton reads (both families' parsed configs have them). */
export interface GemmaBaseConfig {
  modelType: string;
  vocabSize: number;
  numLayers: number;
  hiddenSize: number;
  maxPositionEmbeddings: number;
  finalLogitSoftcapping: number | null;
  layerTypes: LayerType[];
  slidingWindow: number;
  kvSources: number[];
}

export abstract class GemmaModelBase implements LanguageModel {
  readonly modelType: string;
  readonly vocabSize: number;
  readonly numLayers: number;
  readonly hiddenSize: number;
  readonly maxContext: number;
  readonly prefillChunk = 256;
  readonly stats: { parameters: number; weightBytes: number };
  private readonly head: LmHead;
  private readonly cacheLayout: CacheLayout;

  protected constructor(
    readonly config: Readonly<Record<string, unknown>>,
    cfg: GemmaBaseConfig,
    w: { norm: RMSNorm; head: Linear; tally: { parameters: number; weightBytes: number } },
    /** KV heads and head dim of every layer. */
    kv: { nKvHeads: readonly number[]; headDims: readonly number[] },
  ) {
    this.modelType = cfg.modelType;
    this.vocabSize = cfg.vocabSize;
    this.numLayers = cfg.numLayers;
    this.hiddenSize = cfg.hiddenSize;
    this.maxContext = cfg.maxPositionEmbeddings;
    this.head = new LmHead(w.norm, w.head, cfg.finalLogitSoftcapping);
    this.stats = { parameters: w.tally.parameters, weightBytes: w.tally.weightBytes };
    this.cacheLayout = {
      types: cfg.layerTypes,
      nKvHeads: kv.nKvHeads,
      headDims: kv.headDims,
      slidingWindow: cfg.slidingWindow,
      sources: cfg.kvSources,
    };
  }

  /** Final hidden rows [b.n, hidden] of the batch (before the output norm). */
  protected abstract hidden(b: BatchLayout): Float32Array;

  newState(opts?: StateOptions): GemmaState {
    return new GemmaState(this.cacheLayout, opts);
  }

  suppressedTokenIds(): Int32Array {
    return new Int32Array(0);
  }

  private isState = (s: unknown): s is GemmaState => s instanceof GemmaState && s.layout === this.cacheLayout;

  forward(batch: GemmaForwardInput[], opts: ForwardOptions = {}): Float32Array[] {
    const b = layoutBatch(batch, this.isState);
    const logits = this.head.forward(this.hidden(b), b, opts.logits ?? 'all');
    for (const s of b.seqs) s.state.advance(s.len);
    return logits;
  }
}
