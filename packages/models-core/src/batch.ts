/**
 * The row layout of one forward call over a batch of sequences, for every family. The rows every
 * sequence feeds are concatenated sequence-major, so projections and MLPs run once over all rows;
 * attention then runs per sequence on its slice of rows with its own caches.
 *
 * `checkBatch` validates the inputs (one error code per failure, each naming `batch[i]` and the field):
 *   E_INPUT   the batch is empty; ids empty or not integers; a token id outside [0, vocab);
 *             embeddingOverrides on a model without soft tokens
 *   E_STATE   a state not made by this model's newState(), or one state twice in a batch
 *   E_CONTEXT the sequence would hold more than maxContext (max_position_embeddings) tokens
 * `layoutRows` then places the rows. A family may feed more rows than the caller's new ids (Phi
 * re-encodes a sequence's stored ids when its LongRoPE regime changes): `newLen` says how many of a
 * sequence's rows are new, and only those rows' logits are returned (`outputRows`).
 */
import { MlxcelError, toTokenIds, type ForwardInput, type SequenceState } from '@mlxcel/tensor';

export interface BatchContext<S extends SequenceState> {
  /** Family name used in messages (`phi3`, `gemma4`). */
  family: string;
  vocabSize: number;
  maxContext: number;
  /** True for states this model created. */
  isState(s: unknown): s is S;
  /** Whether inputs may carry embeddingOverrides (multimodal soft tokens). */
  acceptsEmbeddingOverrides: boolean;
}

/** One validated input: its state, its new ids as an Int32Array, and the input as given. */
export interface CheckedInput<S extends SequenceState> {
  state: S;
  ids: Int32Array;
  input: ForwardInput;
}

export function checkBatch<S extends SequenceState>(batch: readonly ForwardInput[], ctx: BatchContext<S>): CheckedInput<S>[] {
  const where = `${ctx.family}.forward`;
  if (!Array.isArray(batch) || batch.length === 0) throw new MlxcelError('E_INPUT', `${where}: the batch is empty`);
  const seen = new Set<unknown>();
  return batch.map((input, b) => {
    const state = input.state;
    if (!ctx.isState(state)) throw new MlxcelError('E_STATE', `${where}: batch[${b}].state was not created by this model's newState()`);
    if (seen.has(state)) throw new MlxcelError('E_STATE', `${where}: batch[${b}] reuses the state of an earlier sequence in this batch`);
    seen.add(state);
    const raw: unknown = input.ids;
    if (!(raw instanceof Int32Array) && !Array.isArray(raw))
      throw new MlxcelError('E_INPUT', `${where}: batch[${b}].ids is empty (a non-empty Int32Array or number[] is needed)`);
    // The one token-id validator (no Int32Array.from: 4294967297 would become id 1 and pass the range check).
    let ids: Int32Array;
    try {
      ids = toTokenIds(raw, `${where}: batch[${b}].ids`, ctx.vocabSize);
    } catch (e) {
      throw new MlxcelError('E_INPUT', (e as Error).message);
    }
    if (ids.length === 0) throw new MlxcelError('E_INPUT', `${where}: batch[${b}].ids is empty (a non-empty Int32Array or number[] is needed)`);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (!(id >= 0 && id < ctx.vocabSize))
        throw new MlxcelError('E_INPUT', `${where}: batch[${b}].ids[${i}]: token id ${id} is outside the vocabulary [0, ${ctx.vocabSize})`);
    }
    if (input.embeddingOverrides && !ctx.acceptsEmbeddingOverrides)
      throw new MlxcelError('E_INPUT', `${where}: batch[${b}].embeddingOverrides: ${ctx.family} is a text model and takes no soft tokens`);
    const total = state.offset + ids.length;
    if (total > ctx.maxContext)
      throw new MlxcelError('E_CONTEXT', `${where}: batch[${b}] would hold ${total} tokens, more than max_position_embeddings = ${ctx.maxContext}`);
    return { state, ids, input };
  });
}

/** What a family decides per sequence before the rows are placed. */
export interface SeqFeed<S extends SequenceState, I = ForwardInput> {
  state: S;
  input: I;
  /** Ids fed this step (the caller's new ids, or a re-encoded prefix followed by them). */
  fed: Int32Array;
  /** Absolute position of fed[0]. */
  p0: number;
  /** How many of the fed rows (at the end) are the caller's new tokens. */
  newLen: number;
}

/** A sequence's rows in the batch. */
export type SeqRows<F> = F & {
  /** First row of this sequence in the concatenated batch. */
  start: number;
  /** Rows fed (fed.length). */
  len: number;
};

export interface BatchLayout<R> {
  /** Total rows. */
  n: number;
  /** All fed ids, sequence after sequence. */
  ids: Int32Array;
  /** Absolute position of every row: p0 of its sequence + index within the sequence. */
  positions: Int32Array;
  seqs: R[];
}

export function layoutRows<F extends { fed: Int32Array; p0: number }>(feeds: readonly F[]): BatchLayout<SeqRows<F>> {
  const n = feeds.reduce((s, f) => s + f.fed.length, 0);
  const ids = new Int32Array(n);
  const positions = new Int32Array(n);
  let r = 0;
  const seqs = feeds.map((f) => {
    const len = f.fed.length;
    ids.set(f.fed, r);
    for (let t = 0; t < len; t++) positions[r + t] = f.p0 + t;
    const rows = { ...f, start: r, len };
    r += len;
    return rows;
  });
  return { n, ids, positions, seqs };
}

/**
 * Rows whose logits are returned: per sequence its new rows ('all') or only its last row ('last').
 * Returns the row indices into the concatenated batch and the row count per sequence.
 */
/** How many rows outputRows(layout, mode) returns, without building them. */
export function outputRowCount(layout: BatchLayout<{ newLen: number }>, mode: 'all' | 'last'): number {
  return mode === 'last' ? layout.seqs.length : layout.seqs.reduce((a, s) => a + s.newLen, 0);
}

export function outputRows(layout: BatchLayout<{ start: number; len: number; newLen: number }>, mode: 'all' | 'last'): { rows: Int32Array; counts: number[] } {
  const counts = layout.seqs.map((s) => (mode === 'last' ? 1 : s.newLen));
  const rows = new Int32Array(counts.reduce((a, b) => a + b, 0));
  let o = 0;
  layout.seqs.forEach((s, i) => {
    const first = s.start + s.len - counts[i]!;
    for (let t = 0; t < counts[i]!; t++) rows[o++] = first + t;
  });
  return { rows, counts };
}

/** Copies the listed rows of a row-major [*, width] matrix: [rows.length, width]. */
export function gatherRows(x: Float32Array, width: number, rows: Int32Array): Float32Array {
  const out = new Float32Array(rows.length * width);
  for (let i = 0; i < rows.length; i++) out.set(x.subarray(rows[i]! * width, (rows[i]! + 1) * width), i * width);
  return out;
}

/**
 * The part of a prompt's embedding overrides that falls in the chunk [start, start + len), with rows
 * re-based to the chunk (for chunked multimodal prefill: overrides index the ids of one forward call).
 */
export function overridesForChunk(
  o: { rows: Int32Array; values: Float32Array }, start: number, len: number,
): { rows: Int32Array; values: Float32Array } | undefined {
  if (o.rows.length === 0) return undefined;
  const H = o.values.length / o.rows.length;
  const keep: number[] = [];
  o.rows.forEach((r, i) => {
    if (r >= start && r < start + len) keep.push(i);
  });
  if (keep.length === 0) return undefined;
  const rows = new Int32Array(keep.length);
  const values = new Float32Array(keep.length * H);
  keep.forEach((i, j) => {
    rows[j] = o.rows[i]! - start;
    values.set(o.values.subarray(i * H, (i + 1) * H), j * H);
  });
  return { rows, values };
}
