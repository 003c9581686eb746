/**
 * The Gemma forward input (the multimodal and padded-prefill hooks) and the row layout of one call:
 * every sequence feeds its new ids from its current offset (models-core `checkBatch` / `layoutRows`).
 */
import { checkBatch, layoutRows, type BatchLayout, type SeqFeed, type SeqRows } from '@mlxcel/models-core';
import type { ForwardInput } from '@mlxcel/tensor';
import type { GemmaState } from './state.js';

/** Extra, optional members of a Gemma forward input. */
export interface GemmaForwardInput extends Omit<ForwardInput, 'ids'> {
  /** New token ids (rank 1). A plain array is accepted too. */
  ids: Int32Array | readonly number[];
  /**
   * Precomputed per-layer-input token component [rows, num_hidden_layers · hidden_size_per_layer_input]
   * (already multiplied by sqrt(P)), as a multimodal front-end computes it next to the embeddings.
   * Row 0 belongs to absolute position `firstPosition` (default: this sequence's offset at this call).
   * It is aligned to this call's rows (docs/architecture/gemma3n.md §13): rows past its end
   * are zero (a padded prefill), extra rows are ignored (a chunk of a longer prompt), and with an exact
   * match it is used as is.
   */
  perLayerInputs?: { values: Float32Array; rows: number; firstPosition?: number };
}

export type GemmaSeqRows = SeqRows<SeqFeed<GemmaState, GemmaForwardInput>>;
export type GemmaLayout = BatchLayout<GemmaSeqRows>;

export function layoutGemmaBatch(
  batch: readonly GemmaForwardInput[],
  ctx: { family: string; vocabSize: number; maxContext: number; isState: (s: unknown) => s is GemmaState },
): GemmaLayout {
  const checked = checkBatch(batch as readonly ForwardInput[], { ...ctx, acceptsEmbeddingOverrides: true });
  // p0 = the state's offset, read ONCE here before the layer loop: KV-shared layers must not read the
  // owner cache's offset, which the owner's update has already advanced (docs/architecture/gemma3n.md §10).
  return layoutRows(checked.map((c) => ({ state: c.state, input: c.input as GemmaForwardInput, fed: c.ids, p0: c.state.offset, newLen: c.ids.length })));
}
