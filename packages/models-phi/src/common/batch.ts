/**
 * Turns a batch of ForwardInputs into "runs": the rows each sequence contributes to one concatenated
 * activation matrix (projections and MLPs run once over all rows; attention runs per sequence on its
 * own cache), plus the RoPE table each sequence uses this step.
 *
 * The LongRoPE regime is decided per sequence from its total length after the step (phi3.md §4.4,
 * rule 1), or from `totalLength` when the caller says how long the prompt being prefilled in chunks
 * will be (rule 4). When the regime of the cached keys differs from the one this step needs, the whole
 * sequence is re-encoded: its caches are dropped and its stored ids are fed again in front of the new
 * ones (rule 2, what HF's prepare_inputs_for_generation does at the crossing); only the new rows'
 * logits are returned.
 */
import type { RopeRegime, RopeSpec, RopeTable, RopeTableCache } from '@mlxcel/rope';
import { MlxcelError, type ForwardInput } from '@mlxcel/tensor';
import { PhiSequence } from './sequence.js';

/** ForwardInput plus the optional prefill-length hint Phi models understand. */
export interface PhiForwardInput extends ForwardInput {
  /**
   * Total length the sequence will have once the prompt being prefilled is complete (cached prefix +
   * whole prompt). Lets every prefill chunk use the RoPE table of the final length, so no chunk has to
   * be re-encoded when a long prompt crosses original_max_position_embeddings. Optional: without it the
   * model re-encodes at the crossing and results are the same for every row after the crossing.
   */
  totalLength?: number;
}

export interface Run {
  seq: PhiSequence;
  /** Ids fed this step (the stored prefix first when re-encoding). */
  ids: Int32Array;
  /** The caller's new ids. */
  newIds: Int32Array;
  /** First row of this run in the concatenated activations. */
  row0: number;
  /** Absolute position of ids[0]. */
  pos0: number;
  /** Rows fed (ids.length). */
  T: number;
  regime: RopeRegime;
  table: RopeTable;
  /** The sequence's lengthFloor after this step. */
  floor: number;
}

export interface Plan {
  runs: Run[];
  /** All ids, run after run. */
  ids: Int32Array;
  rows: number;
}

export interface PlanContext {
  owner: object;
  family: string;
  vocabSize: number;
  rope: RopeSpec;
  tables: RopeTableCache;
  maxContext: number;
}

export function planBatch(batch: readonly ForwardInput[], ctx: PlanContext): Plan {
  if (batch.length === 0) throw new MlxcelError('E_INPUT', `${ctx.family}.forward: empty batch`);
  const seen = new Set<PhiSequence>();
  const runs: Run[] = [];
  let rows = 0;
  batch.forEach((input, b) => {
    const seq = input.state;
    if (!(seq instanceof PhiSequence) || seq.owner !== ctx.owner)
      throw new MlxcelError('E_STATE', `${ctx.family}.forward: batch[${b}].state was not created by this model's newState()`);
    if (seen.has(seq)) throw new MlxcelError('E_STATE', `${ctx.family}.forward: batch[${b}] repeats a sequence state already in this batch`);
    seen.add(seq);
    if (input.embeddingOverrides)
      throw new MlxcelError('E_INPUT', `${ctx.family}.forward: batch[${b}].embeddingOverrides: Phi text models take no soft tokens`);
    const newIds = input.ids;
    if (!(newIds instanceof Int32Array) || newIds.length === 0)
      throw new MlxcelError('E_INPUT', `${ctx.family}.forward: batch[${b}].ids must be a non-empty Int32Array`);
    for (let i = 0; i < newIds.length; i++) {
      const id = newIds[i]!;
      if (id < 0 || id >= ctx.vocabSize)
        throw new MlxcelError('E_INPUT', `${ctx.family}.forward: batch[${b}].ids[${i}] = ${id} is outside the vocabulary [0, ${ctx.vocabSize})`);
    }
    const total = seq.offset + newIds.length;
    if (total > ctx.maxContext)
      throw new MlxcelError('E_CONTEXT', `${ctx.family}.forward: batch[${b}] would hold ${total} tokens, more than max_position_embeddings = ${ctx.maxContext}`);
    const hint = (input as PhiForwardInput).totalLength;
    if (hint !== undefined && !(Number.isInteger(hint) && hint >= 0))
      throw new MlxcelError('E_INPUT', `${ctx.family}.forward: batch[${b}].totalLength must be a non-negative integer, got ${String(hint)}`);
    const floor = Math.max(seq.lengthFloor, hint ?? 0);
    const regime = ctx.rope.regimeFor(Math.max(total, floor));
    let ids = newIds;
    let pos0 = seq.offset;
    if (seq.offset === 0) {
      if (seq.stale || seq.nbytes > 0) seq.resetCaches(); // leftovers of a failed step
    } else if (seq.stale || seq.regime === null || seq.regime.id !== regime.id) {
      // Re-encode: keys cached under another regime (or lost by a trimmed ring) cannot be reused.
      ids = new Int32Array(total);
      ids.set(seq.ids);
      ids.set(newIds, seq.offset);
      pos0 = 0;
      seq.resetCaches();
    }
    runs.push({ seq, ids, newIds, row0: rows, pos0, T: ids.length, regime, table: ctx.tables.get(regime), floor });
    rows += ids.length;
  });
  const ids = new Int32Array(rows);
  for (const r of runs) ids.set(r.ids, r.row0);
  return { runs, ids, rows };
}

/** After a successful step: record the ids and the regime of the keys now cached. */
export function commitBatch(plan: Plan): void {
  for (const r of plan.runs) {
    r.seq.appendIds(r.newIds);
    r.seq.regime = r.regime;
    r.seq.lengthFloor = r.floor;
  }
}

/**
 * Rows whose logits are returned, per run: the new ids' rows ('all') or only the last one ('last').
 * Returns the row indices into the concatenated activations and the row count per run.
 */
export function outputRows(plan: Plan, mode: 'all' | 'last'): { rows: Int32Array; counts: number[] } {
  const counts = plan.runs.map((r) => (mode === 'last' ? 1 : r.newIds.length));
  const rows = new Int32Array(counts.reduce((a, b) => a + b, 0));
  let o = 0;
  plan.runs.forEach((r, i) => {
    const first = r.row0 + r.T - counts[i]!;
    for (let t = 0; t < counts[i]!; t++) rows[o++] = first + t;
  });
  return { rows, counts };
}

/** Copies the listed rows of a row-major [*, width] matrix. */
export function gatherRows(x: Float32Array, width: number, rows: Int32Array): Float32Array {
  const out = new Float32Array(rows.length * width);
  for (let i = 0; i < rows.length; i++) out.set(x.subarray(rows[i]! * width, (rows[i]! + 1) * width), i * width);
  return out;
}
