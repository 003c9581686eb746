/**
 * What the three Phi architectures add to models-core's DecoderModel: their sequence state (ids kept
 * for LongRoPE re-encoding), the row plan with the per-sequence RoPE regime, and the rule that a failed
 * step marks its sequences stale (rebuilt from their ids next time). Each architecture's model.ts
 * supplies `finalHiddenStates`.
 */
import { buildLayerCaches, DecoderModel, type AttentionGeometry, type LayerCacheSpec, type LmHead } from '@mlxcel/models-core';
import { RopeTableCache, type RopeSpec } from '@mlxcel/rope';
import type { ForwardInput, StateOptions } from '@mlxcel/tensor';
import { commitBatch, planBatch, type PhiLayout } from './batch.js';
import { PhiSequence } from './sequence.js';

/** The identity fields every Phi config.json spells the same way (HF key names). */
export interface PhiBaseConfig {
  model_type: string;
  vocab_size: number;
  num_hidden_layers: number;
  hidden_size: number;
  max_position_embeddings: number;
  rope: RopeSpec;
}

export abstract class PhiModelBase extends DecoderModel<PhiSequence, PhiLayout> {
  readonly rope: RopeSpec;
  protected readonly geom: AttentionGeometry;
  private readonly layerCaches: LayerCacheSpec[];
  private readonly tables: RopeTableCache;

  protected constructor(
    raw: Readonly<Record<string, unknown>>,
    cfg: PhiBaseConfig,
    head: LmHead,
    /** The attention geometry every layer uses, and each layer's cache spec. */
    attention: { geom: AttentionGeometry; layerCaches: LayerCacheSpec[] },
    prefillChunk: number,
    stats: { parameters: number; weightBytes: number },
  ) {
    super(
      {
        modelType: cfg.model_type, config: raw, vocabSize: cfg.vocab_size, numLayers: cfg.num_hidden_layers,
        hiddenSize: cfg.hidden_size, maxContext: cfg.max_position_embeddings, prefillChunk, stats,
      },
      head,
    );
    this.rope = cfg.rope;
    this.geom = attention.geom;
    this.layerCaches = attention.layerCaches;
    this.tables = new RopeTableCache(cfg.rope);
  }

  newState(opts: StateOptions = {}): PhiSequence {
    // PhiSequence builds its caches at once, so an unavailable kind fails here, not on first use.
    return new PhiSequence(this, () => buildLayerCaches(this.layerCaches, opts.kvCache), (n) => this.rope.regimeFor(n));
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
