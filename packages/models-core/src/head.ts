/**
 * The LM head shared by every family: pick the rows whose logits are returned, final norm, output
 * projection (tied embedding or lm_head), then the family's logit transform — Gemma's soft-cap
 * `c · tanh(z / c)` (huggingface/transformers `models/gemma3n/modeling_gemma3n.py`,
 * `Gemma3nForCausalLM.forward`, `final_logit_softcapping`) or Phi-3-small's division by
 * mup_width_multiplier. Only returned rows are projected: with `logits: 'last'` that is one row per
 * sequence, which matters with 262k-row vocabularies.
 */
import { MlxcelError, NonFiniteError, ops, type Linear } from '@mlxcel/tensor';
import { gatherRows, outputRowCount, outputRows, type BatchLayout } from './batch.js';

/** RMSNorm or LayerNorm: normalizes rows of width `dim`. */
export interface RowNorm {
  forward(x: Float32Array, dim?: number, out?: Float32Array): Float32Array;
}

export interface LmHeadOptions {
  /** c of c · tanh(z / c); null = none. */
  softcap?: number | null;
  /** Logits are divided by this (a division, as HF does it, not a multiply by the reciprocal); null = none. */
  divideBy?: number | null;
}

export class LmHead {
  readonly softcap: number | null;
  readonly divideBy: number | null;
  constructor(readonly norm: RowNorm, readonly proj: Linear, opts: LmHeadOptions = {}) {
    this.softcap = opts.softcap ?? null;
    this.divideBy = opts.divideBy ?? null;
  }

  get vocabSize(): number {
    return this.proj.outFeatures;
  }

  /**
   * Checks a ForwardOptions.logitsOut for `forward(h, layout, which, out)`: a Float32Array of at least
   * rows × vocab floats. Called before the layers run, so a bad buffer leaves every state as it was.
   */
  checkLogitsOut(layout: BatchLayout<{ newLen: number }>, which: 'all' | 'last', out: unknown): void {
    if (!(out instanceof Float32Array)) throw new MlxcelError('E_INPUT', 'forward: opts.logitsOut must be a Float32Array');
    const rows = outputRowCount(layout, which), V = this.vocabSize;
    if (out.length < rows * V)
      throw new MlxcelError('E_INPUT', `forward: opts.logitsOut holds ${out.length} floats, but ${rows} logits row(s) of vocab ${V} need ${rows * V}`);
  }

  /**
   * h [N, H] (the final hidden rows, before the norm) → logits per sequence ([rows, V] each), written to
   * `out` (views into it) when given (ForwardOptions.logitsOut, see checkLogitsOut).
   */
  forward(
    h: Float32Array, layout: BatchLayout<{ start: number; len: number; newLen: number }>, which: 'all' | 'last', out?: Float32Array,
  ): Float32Array[] {
    const H = this.proj.inFeatures, V = this.vocabSize;
    const { rows, counts } = outputRows(layout, which);
    const x = gatherRows(h, H, rows); // [R, H]
    this.norm.forward(x, H, x);
    const logits = this.proj.forward(x, rows.length, out?.subarray(0, rows.length * V)); // [R, V]
    // The one per-step NaN/Inf check, fused with the soft-cap in one native pass over [R, V]: the check
    // reads the values before c·tanh(z/c), which maps ±Inf to ±c and would hide them (non-finite values
    // are left as they are; DecoderModel.forward then locates where they first appear).
    const bad = ops.softcapCheck(logits, this.softcap);
    if (bad >= 0) {
      let seq = 0, row = Math.floor(bad / V);
      while (seq < counts.length - 1 && row >= counts[seq]!) row -= counts[seq++]!;
      throw new NonFiniteError(`the logits of sequence ${seq}`, bad % V, logits[bad]!, 'E_NONFINITE_LOGITS');
    }
    if (this.divideBy !== null) {
      const d = this.divideBy;
      for (let i = 0; i < logits.length; i++) logits[i] = logits[i]! / d;
    }
    const perSeq: Float32Array[] = [];
    let r = 0;
    for (const c of counts) {
      perSeq.push(logits.subarray(r * V, (r + c) * V));
      r += c;
    }
    return perSeq;
  }
}
