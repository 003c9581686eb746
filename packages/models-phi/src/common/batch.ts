/**
 * The Phi row layout of one forward call: models-core `checkBatch` validates the inputs, then each
 * sequence gets its rows plus the RoPE table it uses this step.
 *
 * The LongRoPE regime is decided per sequence from its total length after the step, or from the
 * length the state was told to expect (`PhiSequence.expectLength`: how long the prompt being prefilled
 * in chunks will be, docs/architecture/phi3.md §4.4). When the regime of the cached keys differs from the
 * one this step needs, the whole sequence is re-encoded: its caches are dropped and its stored ids are
 * fed again in front of the new ones (what HF's `prepare_inputs_for_generation` does at the crossing);
 * only the new rows' logits are returned (`newLen`).
 */
import { checkBatch, layoutRows, type BatchLayout, type SeqFeed, type SeqRows } from '@mlxcel/models-core';
import type { RopeRegime, RopeSpec, RopeTable, RopeTableCache } from '@mlxcel/rope';
import type { ForwardInput } from '@mlxcel/tensor';
import { PhiSequence } from './sequence.js';

export type PhiRun = SeqRows<SeqFeed<PhiSequence> & {
  /** The caller's new ids (the last newLen of `fed`). */
  newIds: Int32Array;
  regime: RopeRegime;
  table: RopeTable;
}>;

export type PhiLayout = BatchLayout<PhiRun>;

export interface PlanContext {
  owner: object;
  family: string;
  vocabSize: number;
  rope: RopeSpec;
  tables: RopeTableCache;
  maxContext: number;
}

export function planBatch(batch: readonly ForwardInput[], ctx: PlanContext): PhiLayout {
  const isState = (s: unknown): s is PhiSequence => s instanceof PhiSequence && s.owner === ctx.owner;
  const checked = checkBatch(batch, { ...ctx, isState, acceptsEmbeddingOverrides: false });
  return layoutRows(checked.map(({ state: seq, ids: newIds, input }) => {
    const total = seq.offset + newIds.length;
    const regime = ctx.rope.regimeFor(Math.max(total, seq.lengthFloor));
    let fed = newIds;
    let p0 = seq.offset;
    if (seq.offset === 0) {
      if (seq.stale || seq.nbytes > 0) seq.resetCaches(); // leftovers of a failed step
    } else if (seq.stale || seq.regime === null || seq.regime.id !== regime.id) {
      // Re-encode: keys cached under another regime (or lost by a trimmed ring) cannot be reused.
      fed = new Int32Array(total);
      fed.set(seq.ids);
      fed.set(newIds, seq.offset);
      p0 = 0;
      seq.resetCaches();
    }
    return { state: seq, input, fed, p0, newLen: newIds.length, newIds, regime, table: ctx.tables.get(regime) };
  }));
}

/** After a successful step: record the ids and the regime of the keys now cached. */
export function commitBatch(layout: PhiLayout): void {
  for (const r of layout.seqs) {
    r.state.appendIds(r.newIds);
    r.state.regime = r.regime;
  }
}
