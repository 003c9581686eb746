/**
 * The routing decision every router returns and the expert block consumes: for each token, k expert
 * ids and their mixing weights, row-major [tokens, k].
 */
import { MlxcelError } from '@mlxcel/tensor';

export interface Routing {
  /** Expert ids [tokens, k]. */
  ids: Int32Array;
  /** Mixing weights [tokens, k], aligned with `ids`. Routers differ in whether a row sums to 1. */
  weights: Float32Array;
  tokens: number;
  k: number;
}

/** Checks router logits [tokens, E] and returns the token count. */
export function checkLogits(fn: string, logits: Float32Array, numExperts: number, k: number): number {
  if (!Number.isInteger(numExperts) || numExperts < 1)
    throw new MlxcelError('E_ARG', `${fn}: numExperts must be a positive integer, got ${numExperts}`);
  if (!Number.isInteger(k) || k < 1 || k > numExperts)
    throw new MlxcelError('E_ARG', `${fn}: k = ${k} must be an integer in 1..${numExperts} (numExperts)`);
  if (logits.length % numExperts !== 0)
    throw new MlxcelError('E_SHAPE', `${fn}: ${logits.length} logits are not a whole number of rows of ${numExperts} experts`);
  const T = logits.length / numExperts;
  for (let i = 0; i < logits.length; i++)
    if (Number.isNaN(logits[i]!))
      throw new MlxcelError('E_ROUTER_NAN', `${fn}: router logit of token ${Math.floor(i / numExperts)}, expert ${i % numExperts} is NaN`);
  return T;
}

/**
 * Indices of the k largest values of row[0..E), largest first; equal values are taken lowest index
 * first (the tie rule the specs fix, since torch.topk leaves it unspecified). O(E·k), E is small.
 */
export function topKIndices(row: ArrayLike<number>, E: number, k: number, out: Int32Array, at: number): void {
  for (let r = 0; r < k; r++) {
    let best = -1;
    for (let j = 0; j < E; j++) {
      let taken = false;
      for (let q = 0; q < r; q++) if (out[at + q] === j) { taken = true; break; }
      if (taken) continue;
      if (best < 0 || row[j]! > row[best]!) best = j;
    }
    out[at + r] = best;
  }
}
