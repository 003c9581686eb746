/**
 * Softmax over all experts, then the top k (Mixtral/Qwen-style routing, and mlx-lm's PhiMoE parity mode).
 *   p_j = exp(s_j − max s) / Σ_i exp(s_i − max s);   w = p at the k largest s (lowest index on ties);
 *   renormalize: w_r ← w_r / Σ_{r'} w_{r'}  (equivalently, a softmax over the k selected logits).
 * Selection is on the logits, which order exactly as the probabilities do but cannot tie by rounding.
 * Arithmetic is float64, rounded to f32 once at the end.
 */
import { checkLogits, topKIndices, type Routing } from './routing.js';

export interface SoftmaxTopKOptions {
  /** Divide the k weights by their sum (default true). */
  renormalize?: boolean;
}

export function softmaxTopK(logits: Float32Array, numExperts: number, k: number, opts: SoftmaxTopKOptions = {}): Routing {
  const T = checkLogits('softmaxTopK', logits, numExperts, k);
  const E = numExperts, renorm = opts.renormalize ?? true;
  const ids = new Int32Array(T * k), weights = new Float32Array(T * k);
  const p = new Float64Array(k);
  for (let t = 0; t < T; t++) {
    const row = logits.subarray(t * E, (t + 1) * E);
    topKIndices(row, E, k, ids, t * k);
    const m = row[ids[t * k]!]!;
    let z = 0;
    for (let j = 0; j < E; j++) z += Math.exp(row[j]! - m);
    let sel = 0;
    for (let r = 0; r < k; r++) sel += (p[r] = Math.exp(row[ids[t * k + r]!]! - m));
    const denom = renorm ? sel : z;
    for (let r = 0; r < k; r++) weights[t * k + r] = p[r]! / denom;
  }
  return { ids, weights, tokens: T, k };
}
