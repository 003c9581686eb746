/**
 * What Gemma 3n and Gemma 4 add to models-core's DecoderModel: their sequence state (offset-based,
 * KV-shared layers reading their source's cache), the row layout from each state's offset, and the
 * LM head with final_logit_softcapping. Each architecture's model.ts supplies `finalHiddenStates`.
 */
import { cacheSpecOf, DecoderModel, LmHead, type AttentionGeometry, type LayerCacheSpec, type WeightStats } from '@mlxcel/models-core';
import type { ForwardInput, ForwardOptions, Linear, RMSNorm, StateOptions } from '@mlxcel/tensor';
import { layoutGemmaBatch, type GemmaForwardInput, type GemmaLayout } from './batch.js';
import { GemmaState } from './state.js';

/** The config fields the skeleton reads (both families' parsed configs have them). */
export interface GemmaBaseConfig {
  modelType: string;
  vocabSize: number;
  numLayers: number;
  hiddenSize: number;
  maxPositionEmbeddings: number;
  finalLogitSoftcapping: number | null;
  kvSources: number[];
}

export abstract class GemmaModelBase extends DecoderModel<GemmaState, GemmaLayout> {
  private readonly cacheSpecs: LayerCacheSpec[];

  protected constructor(
    config: Readonly<Record<string, unknown>>,
    cfg: GemmaBaseConfig,
    w: { norm: RMSNorm; head: Linear; stats: WeightStats },
    /** The attention geometry of every layer (its KV heads, head dim and window size its cache). */
    geometry: readonly AttentionGeometry[],
    /** Prefill chunk the engine should use (tokens): the family's measured best (see each model.ts). */
    prefillChunk: number,
  ) {
    super(
      {
        modelType: cfg.modelType, config, vocabSize: cfg.vocabSize, numLayers: cfg.numLayers, hiddenSize: cfg.hiddenSize,
        maxContext: cfg.maxPositionEmbeddings, prefillChunk,
        stats: w.stats.value,
      },
      new LmHead(w.norm, w.head, { softcap: cfg.finalLogitSoftcapping }),
    );
    this.cacheSpecs = geometry.map((g, l) => cacheSpecOf(g, cfg.kvSources[l]));
  }

  newState(opts?: StateOptions): GemmaState {
    return new GemmaState(this.cacheSpecs, opts);
  }

  private isState = (s: unknown): s is GemmaState => s instanceof GemmaState && s.specs === this.cacheSpecs;

  /** Gemma inputs may carry plain-array ids, per-layer inputs and embedding overrides. */
  override forward(batch: GemmaForwardInput[], opts?: ForwardOptions): Float32Array[] {
    return super.forward(batch as ForwardInput[], opts);
  }

  protected layoutBatch(batch: readonly ForwardInput[]): GemmaLayout {
    return layoutGemmaBatch(batch as readonly GemmaForwardInput[], {
      family: this.modelType, vocabSize: this.vocabSize, maxContext: this.maxContext, isState: this.isState,
    });
  }

  protected commit(layout: GemmaLayout): void {
    for (const s of layout.seqs) s.state.advance(s.len);
  }
}
