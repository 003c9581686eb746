/**
 * The row layout of one forward call over a batch of sequences: the new tokens of every sequence
 * are concatenated (sequence-major) so projections and MLPs run once over all rows; attention then
 * runs per sequence on its slice of rows with its own caches.
 */
import { MlxcelError, toTokenIds, type ForwardInput } from '@mlxcel/tensor';
import type { GemmaState } from './state.js';

/** Extra, optional members of a Gemma forward input (the multimodal and padded-prefill hooks). */
export interface GemmaForwardInput extends Omit<ForwardInput, 'ids'> {
  /** New token ids (rank 1). A plain array is accepted too. */
  ids: Int32Array | readonly number[];
  /**
   * Precomputed per-layer-input token component [rows, num_hidden_layers · hidden_size_per_layer_input]
   * (already multiplied by sqrt(P)), as a multimodal front-end computes it next to the embeddings.
   * Row 0 belongs to absolute position `firstPosition` (default: this sequence's offset at this call).
   * It is aligned to this call's rows (gemma3n.md §13): rows past its end are zero (a padded prefill),
   * extra rows are ignored (a chunk of a longer prompt), and with an exact match it is used as is.
   */
  perLayerInputs?: { values: Float32Array; rows: number; firstPosition?: number };
}

export interface SeqSlice {
  /** First row of this sequence in the concatenated batch. */
  start: number;
  len: number;
  /** Tokens already in the sequence before this call, read once before the layer loop. */
  p0: number;
  state: GemmaState;
  input: GemmaForwardInput;
}

export interface BatchLayout {
  /** Total rows. */
  n: number;
  ids: Int32Array;
  /** Absolute position of every row: p0 of its sequence + index within the sequence. */
  positions: Int32Array;
  seqs: SeqSlice[];
}

export function layoutBatch(batch: readonly GemmaForwardInput[], isState: (s: unknown) => s is GemmaState): BatchLayout {
  if (!Array.isArray(batch) || batch.length === 0) throw new MlxcelError('E_INPUT', 'forward: the batch is empty');
  const idLists = batch.map((b, i) => {
    if (!isState(b.state)) throw new MlxcelError('E_INPUT', `forward: batch[${i}].state was not created by this model's newState()`);
    const ids = toTokenIds(b.ids ?? [], `forward: batch[${i}].ids`);  // range vs the tables: the native gather
    if (ids.length === 0) throw new MlxcelError('E_INPUT', `forward: batch[${i}].ids is empty`);
    return ids;
  });
  const states = new Set<unknown>();
  for (const [i, b] of batch.entries()) {
    if (states.has(b.state)) throw new MlxcelError('E_INPUT', `forward: batch[${i}] reuses the state of an earlier sequence`);
    states.add(b.state);
  }
  const n = idLists.reduce((s, x) => s + x.length, 0);
  const ids = new Int32Array(n);
  const positions = new Int32Array(n);
  const seqs: SeqSlice[] = [];
  let r = 0;
  batch.forEach((b, i) => {
    const list = idLists[i]!;
    const state = b.state as GemmaState;
    const p0 = state.offset; // THE read of the step's starting offset (gemma3n.md §10)
    ids.set(list, r);
    for (let t = 0; t < list.length; t++) positions[r + t] = p0 + t;
    seqs.push({ start: r, len: list.length, p0, state, input: b });
    r += list.length;
  });
  return { n, ids, positions, seqs };
}
