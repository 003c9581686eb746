/**
 * PhiMoE "sparsemixer" routing, inference path (HF transformers `sparsemixer`; spec docs/architecture/phimoe.md §5).
 *
 * For one token with router logits s ∈ R^E and threshold τ = 2·ε (ε = router_jitter_noise), round r
 * (r = 1..k) with C_r = experts not yet chosen:
 *   m_r = max_{j∈C_r} s_j,   i_r = argmax_{j∈C_r} s_j (lowest index on ties)
 *   φ_j = max(|s_j|, m_r)            — the ORIGINAL s_j, a clamp from below by m_r (not min)
 *   masked_j ⇔ (m_r − s_j) / φ_j > τ   (0/0 = NaN is not > τ, so not masked)
 *   w_r = softmax over {s_j : j ∈ C_r, not masked_j} at i_r = 1 / Σ_{j∈C_r, unmasked} exp(s_j − m_r)
 * The weights are NOT renormalised: each w_r ∈ (0, 1], and their sum ranges over (0, k].
 * HF defines exactly two rounds; k ≠ 2 uses the same rule per round (our extension, see the spec).
 *
 * The mask decision is evaluated in f32 as the f32 reference does (each of m − s and the division
 * rounded to f32, τ as an f32), so borderline experts fall on the same side; the softmax sum is float64.
 */
import { MlxcelError } from '@mlxcel/tensor';
import { checkLogits, type Routing } from './routing.js';

const f32 = Math.fround;

export function sparsemixer(logits: Float32Array, numExperts: number, k: number, jitterEps: number): Routing {
  const T = checkLogits('sparsemixer', logits, numExperts, k);
  if (typeof jitterEps !== 'number' || !Number.isFinite(jitterEps) || jitterEps < 0)
    throw new MlxcelError('E_ARG', `sparsemixer: jitterEps (router_jitter_noise) must be a finite number >= 0, got ${jitterEps}`);
  const E = numExperts;
  const tau = f32(2 * jitterEps);
  const ids = new Int32Array(T * k), weights = new Float32Array(T * k);
  const chosen = new Uint8Array(E);
  for (let t = 0; t < T; t++) {
    const s = logits.subarray(t * E, (t + 1) * E);
    chosen.fill(0);
    for (let r = 0; r < k; r++) {
      let win = -1;
      for (let j = 0; j < E; j++) if (!chosen[j] && (win < 0 || s[j]! > s[win]!)) win = j;
      const m = s[win]!;
      let z = 0;
      for (let j = 0; j < E; j++) {
        if (chosen[j]) continue;
        const phi = Math.max(Math.abs(s[j]!), m);
        const masked = f32(f32(m - s[j]!) / phi) > tau;
        if (!masked) z += Math.exp(s[j]! - m);
      }
      chosen[win] = 1;
      ids[t * k + r] = win;
      weights[t * k + r] = 1 / z;
    }
  }
  return { ids, weights, tokens: T, k };
}
