/**
 * What the three Phi architectures add to models-core's DecoderModel: their sequence state (ids kept
 * for LongRoPE re-encoding), the row plan with the per-sequence RoPE regime, the rule that a failed
 * step marks its sequences stale (rebuilt from their ids next time), and the shared top of the forward
 * pass — embed (× the architecture's embedding multiplier) → every decoder layer, tapped — then
 * models-core's LmHead on the final norm and head. Each architecture's model.ts supplies its
 * `decoderLayer`.
 */
import {
  buildLayerCaches, DecoderModel, EMBEDDINGS_NAME, LmHead, runLayers,
  type AttentionGeometry, type HiddenStateTap, type LayerCacheSpec, type LmHeadOptions,
} from '@mlxcel/models-core';
import { RopeTableCache } from '@mlxcel/rope';
import { ops, type ForwardInput, type LayerNorm, type RMSNorm, type StateOptions } from '@mlxcel/tensor';
import { commitBatch, planBatch, type PhiLayout } from './batch.js';
import type { PhiCommonConfig } from './config.js';
import { PhiSequence } from './sequence.js';
import type { PhiWeights } from './weights.js';

/** How an architecture fits the skeleton. */
export interface PhiArchitectureSpec {
  /** The attention geometry every layer uses, and each layer's cache spec. */
  attention: { geom: AttentionGeometry; layerCaches: LayerCacheSpec[] };
  /** Preferred prefill chunk (tokens). */
  prefillChunk: number;
  /** Multiplies the embeddings before the first layer (Phi-3-small's mup_embedding_multiplier); null = none. */
  embeddingScale?: number | null;
  /** LmHead options (Phi-3-small divides the logits by mup_width_multiplier). */
  head?: LmHeadOptions;
}

export abstract class PhiModelBase<C extends PhiCommonConfig & { model_type: string }, W extends PhiWeights<unknown, RMSNorm | LayerNorm>> extends DecoderModel<PhiSequence, PhiLayout> {
  readonly rope: C['rope'];
  protected readonly geom: AttentionGeometry;
  private readonly layerCaches: LayerCacheSpec[];
  private readonly tables: RopeTableCache;
  private readonly embeddingScale: number | null;

  protected constructor(raw: Readonly<Record<string, unknown>>, readonly cfg: C, protected readonly w: W, spec: PhiArchitectureSpec) {
    super(
      {
        modelType: cfg.model_type, config: raw, vocabSize: cfg.vocab_size, numLayers: cfg.num_hidden_layers,
        hiddenSize: cfg.hidden_size, maxContext: cfg.max_position_embeddings, prefillChunk: spec.prefillChunk, stats: w.stats,
      },
      new LmHead(w.norm, w.lmHead, spec.head),
    );
    this.rope = cfg.rope;
    this.geom = spec.attention.geom;
    this.layerCaches = spec.attention.layerCaches;
    this.tables = new RopeTableCache(cfg.rope);
    this.embeddingScale = spec.embeddingScale ?? null;
  }

  /** One decoder layer, updating the residual h [N, H] in place (and returning it). */
  protected abstract decoderLayer(l: number, h: Float32Array, b: PhiLayout): Float32Array;

  /** embed [N, H] (× embeddingScale) → every decoder layer (each updates the residual in place). */
  protected finalHiddenStates(b: PhiLayout, tap: HiddenStateTap | undefined): Float32Array {
    const H = this.hiddenSize;
    const residual = this.w.embed.forward(b.ids); // [N, H]
    if (this.embeddingScale !== null) ops.scale(residual, this.embeddingScale, 0, residual);
    tap?.(EMBEDDINGS_NAME, residual, H);
    return runLayers(residual, this.numLayers, (l, h) => this.decoderLayer(l, h, b), tap, H);
  }

  newState(opts: StateOptions = {}): PhiSequence {
    // PhiSequence builds its caches at once, so an unavailable kind fails here, not on first use.
    return new PhiSequence(this, () => buildLayerCaches(this.layerCaches, opts.kvCache));
  }

  protected layoutBatch(batch: readonly ForwardInput[]): PhiLayout {
    return planBatch(batch, {
      owner: this, family: this.modelType, vocabSize: this.vocabSize, rope: this.rope, tables: this.tables, maxContext: this.maxContext,
    });
  }

  protected commit(layout: PhiLayout): void {
    commitBatch(layout);
  }

  /** Some layers may already hold this step's keys: rebuild these sequences from their ids next time. */
  protected override abandon(layout: PhiLayout): void {
    for (const r of layout.seqs) r.state.stale = true;
  }
}
