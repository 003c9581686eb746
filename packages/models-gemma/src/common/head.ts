/**
 * Final norm, LM head (tied embedding or lm_head) and logit soft-capping
 * `c · tanh(z / c)` (gemma-common.md §4). Only the rows that are returned are projected: with
 * `logits: 'last'` that is one row per sequence, which matters with 262k-row vocabularies.
 */
import { firstNonFinite, NonFiniteError, ops, type Linear, type RMSNorm } from '@mlxcel/tensor';
import type { BatchLayout } from './batch.js';

export class LmHead {
  constructor(readonly norm: RMSNorm, readonly head: Linear, readonly softcap: number | null) {}

  get vocabSize(): number {
    return this.head.outFeatures;
  }

  /** h [N, H] (the final hidden rows, before the norm) → logits per sequence. */
  forward(h: Float32Array, batch: BatchLayout, which: 'all' | 'last'): Float32Array[] {
    const H = this.head.inFeatures;
    const pick: number[] = [];
    for (const s of batch.seqs) {
      if (which === 'last') pick.push(s.start + s.len - 1);
      else for (let t = 0; t < s.len; t++) pick.push(s.start + t);
    }
    const rows = new Float32Array(pick.length * H);
    pick.forEach((r, i) => rows.set(h.subarray(r * H, (r + 1) * H), i * H));
    this.norm.forward(rows, H, rows);
    const logits = this.head.forward(rows, pick.length);
    // Before the soft-cap: c·tanh(z/c) maps ±Inf to ±c, which would hide them (see GemmaModelBase.forward).
    const bad = firstNonFinite(logits);
    if (bad >= 0) throw new NonFiniteError('logits', bad, logits[bad]!, 'E_NONFINITE_LOGITS');
    if (this.softcap !== null) {
      const c = this.softcap;
      ops.scale(logits, 1 / c, 0, logits);
      ops.tanh(logits, logits);
      ops.scale(logits, c, 0, logits);
    }
    const V = this.vocabSize;
    const out: Float32Array[] = [];
    let i = 0;
    for (const s of batch.seqs) {
      const n = which === 'last' ? 1 : s.len;
      out.push(logits.slice(i * V, (i + n) * V));
      i += n;
    }
    return out;
  }
}
