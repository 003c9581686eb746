/**
 * Non-finite (NaN / ±Inf) detection without slowing the decode step: models check only the final logits
 * each step (one pass over [rows, vocab], before any soft-cap, because c·tanh(z/c) maps ±Inf to ±c and
 * would hide them). When that check fails, `locateNonFinite` re-runs the failing rows once on a fresh
 * state with a probe active at every layer boundary and reports the first place non-finite values
 * appear (the embedding, layer 3's attention, ...). Normal steps pay one no-op call per layer.
 */
import { MlxcelError } from './errors.js';

/** Index of the first NaN/±Inf in `x`, or -1. */
export function firstNonFinite(x: ArrayLike<number>): number {
  for (let i = 0; i < x.length; i++) if (!Number.isFinite(x[i]!)) return i;
  return -1;
}

/** Thrown when a tensor holds NaN/Inf; `where` names it ("logits", "layers.3.self_attn output"). */
export class NonFiniteError extends MlxcelError {
  constructor(readonly where: string, readonly index: number, readonly value: number, code = 'E_NONFINITE') {
    super(code, `${where} holds ${value} at element ${index}`);
  }
}

/** Throws NonFiniteError when `x` (or any of several streams) holds NaN/Inf. */
export function assertFinite(where: string, x: Float32Array | readonly Float32Array[]): void {
  const xs = Array.isArray(x) ? x : [x as Float32Array];
  xs.forEach((s, k) => {
    const i = firstNonFinite(s);
    if (i >= 0) throw new NonFiniteError(xs.length > 1 ? `${where} (stream ${k})` : where, i, s[i]!);
  });
}

/**
 * A failure caused by NaN/Inf inside a forward pass: a NonFiniteError, or an MoE router refusing NaN
 * router logits (E_ROUTER_NAN from @mlxcel/moe, which checks its own input every step).
 */
export function isNonFiniteFailure(e: unknown): e is MlxcelError {
  return e instanceof NonFiniteError || (e instanceof MlxcelError && e.code === 'E_ROUTER_NAN');
}

/** A check point inside a forward pass; a no-op except while `locateNonFinite` runs. */
export interface FiniteProbe {
  check(where: string, x: Float32Array | readonly Float32Array[]): void;
}
export const NO_PROBE: FiniteProbe = { check() {} };
const THROWING_PROBE: FiniteProbe = { check: assertFinite };

/**
 * Runs `rerun` with a throwing probe; returns the name of the first check point that saw NaN/Inf, or
 * null when the re-run stayed finite up to the logits (the values then came from context the re-run
 * does not have). Any other error of the re-run is reported as the location's absence, never thrown.
 */
export function locateNonFinite(rerun: (probe: FiniteProbe) => void): string | null {
  try {
    rerun(THROWING_PROBE);
  } catch (e) {
    if (e instanceof NonFiniteError) return e.where;
    if (isNonFiniteFailure(e)) return e.message;  // the router saw NaN before any check point did
    return null;
  }
  return null;
}

/**
 * The error a model throws for non-finite logits: names the model, sequence, vocabulary id and value,
 * and where the non-finite values first appear when the re-run found it.
 */
export function nonFiniteLogitsError(model: string, seq: number, id: number, value: number, firstAt: string | null): MlxcelError {
  return nonFiniteReport(model, `the logits of sequence ${seq} hold ${value} (first at vocabulary id ${id})`, firstAt);
}

/** The same for any non-finite failure: `what` says what was seen ("the logits of …", a router message). */
export function nonFiniteReport(model: string, what: string, firstAt: string | null): MlxcelError {
  const at = firstAt
    ? `; they first appear in ${firstAt}`
    : '; a re-run of these rows alone stayed finite, so they come from earlier context';
  return new MlxcelError(
    'E_NONFINITE_LOGITS',
    `${model}: ${what}${at}. ` +
      'NaN/Inf weights are the usual cause: load with --check-weights to scan them',
  );
}
