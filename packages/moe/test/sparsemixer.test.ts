// Sparsemixer on hand-made vectors. Each expected value is derived here from the rule (which experts
// survive each round's threshold, then 1 / Σ exp(s_j − m) over the survivors), not copied from the
// implementation; the spec's published table is checked as a second, independent source.
import { describe, expect, test } from 'vitest';
import { MlxcelError } from '@mlxcel/tensor';
import { softmaxTopK, sparsemixer } from '../src/index.js';

const f = (v: number[]) => Float32Array.from(v);
/** softmax weight of the winner m among survivors S (all values as f32, like the logits). */
const w = (m: number, survivors: number[]) => 1 / survivors.reduce((z, s) => z + Math.exp(Math.fround(s) - Math.fround(m)), 0);

function route(v: number[], eps = 0.01, k = 2) {
  const r = sparsemixer(f(v), v.length, k, eps);
  return { ids: [...r.ids], weights: [...r.weights], sum: [...r.weights].reduce((a, b) => a + b, 0) };
}

describe('sparsemixer', () => {
  test('one dominant expert: each round keeps only its winner, both weights 1, sum 2', () => {
    // Round 1: m = 10; (10 − 1)/10 = 0.9 > 0.02, so every other expert is masked: w1 = 1.
    // Round 2: m = 1 (expert 1); (1 − 0.5)/1 = 0.5 and (1 − (−1))/max(1, 1) = 2 are > 0.02: w2 = 1.
    const r = route([10, 1, 0.5, -1]);
    expect(r.ids).toEqual([0, 1]);
    expect(r.weights).toEqual([1, 1]);
    expect(r.sum).toBe(2);
  });

  test('near tie at the top: the runner-up survives round 1 (sum > 1)', () => {
    // Round 1: m = 2; expert 1: 0.01/2 = 0.005 ≤ 0.02 survives; 1.5/2 and 3/2 are masked.
    // Round 2: m = 1.99; (1.99 − 0.5)/1.99 = 0.749 masked; expert 3 masked: w2 = 1.
    const r = route([2.0, 1.99, 0.5, -1.0]);
    expect(r.ids).toEqual([0, 1]);
    expect(r.weights[0]).toBeCloseTo(w(2.0, [2.0, 1.99]), 6);
    expect(r.weights[1]).toBe(1);
    expect(r.sum).toBeGreaterThan(1);
    expect(r.weights[0]).toBeCloseTo(0.5025, 4); // spec table
  });

  test('exact ties: lowest index wins, the tied expert survives with ratio 0', () => {
    // Experts 1 and 2 tie at 3. Round 1 picks 1; expert 2 has (3 − 3)/3 = 0: w1 = 1/2.
    // Round 2 picks 2; experts 0 (2/3) and 3 (3/3) are masked: w2 = 1.
    const r = route([1, 3, 3, 0]);
    expect(r.ids).toEqual([1, 2]);
    expect(r.weights).toEqual([0.5, 1]);
  });

  test('all logits equal: nothing is masked, weights 1/E then 1/(E−1), sum < 1', () => {
    const r = route([0.7, 0.7, 0.7, 0.7]);
    expect(r.ids).toEqual([0, 1]);
    expect(r.weights[0]).toBeCloseTo(1 / 4, 7);
    expect(r.weights[1]).toBeCloseTo(1 / 3, 7);
    expect(r.sum).toBeLessThan(1);
  });

  test('all logits zero: 0/0 is NaN, which is not > τ, so nothing is masked', () => {
    const r = route([0, 0, 0, 0, 0]);
    expect(r.ids).toEqual([0, 1]);
    expect(r.weights[0]).toBeCloseTo(1 / 5, 7);
    expect(r.weights[1]).toBeCloseTo(1 / 4, 7);
  });

  test('three close experts: weights sum to less than 1 (spec vector 3)', () => {
    // Round 1: m = 0.30; 0.002/0.30 and 0.003/0.30 ≤ 0.02 survive, 0.4/0.3 masked.
    // Round 2: m = 0.298; expert 2: 0.001/0.298 survives, expert 3 masked.
    const v = [0.3, 0.298, 0.297, -0.1];
    const r = route(v);
    expect(r.ids).toEqual([0, 1]);
    expect(r.weights[0]).toBeCloseTo(w(0.3, [0.3, 0.298, 0.297]), 6);
    expect(r.weights[1]).toBeCloseTo(w(0.298, [0.298, 0.297]), 6);
    expect(r.sum).toBeLessThan(1);
    expect(r.sum).toBeCloseTo(0.834139, 5); // spec table
  });

  test('negative logits: φ = max(|s_j|, m) = |s_j| (a min() port would mask nothing)', () => {
    // m = −1 < 0, so φ_j = |s_j|. Round 1: expert 1: 0.015/1.015 = 0.0148 survives; expert 2:
    // 0.03/1.03 = 0.0291 masked; expert 3: 4/5 masked. Round 2: m = −1.015; expert 2:
    // 0.015/1.03 = 0.0146 survives; expert 3 masked. With min(|s_j|, m) = m < 0 every ratio
    // would be ≤ 0 and all experts would survive.
    const v = [-1.0, -1.015, -1.03, -5.0];
    const r = route(v);
    expect(r.ids).toEqual([0, 1]);
    expect(r.weights[0]).toBeCloseTo(w(-1.0, [-1.0, -1.015]), 6);
    expect(r.weights[1]).toBeCloseTo(w(-1.015, [-1.015, -1.03]), 6);
    const all = w(-1.0, v);
    expect(Math.abs(r.weights[0]! - all)).toBeGreaterThan(1e-3);
  });

  test('negative logits: spec vector 4', () => {
    const r = route([-0.5, -0.505, -0.9, -2.0]);
    expect(r.ids).toEqual([0, 1]);
    expect(r.weights[0]).toBeCloseTo(0.50125, 5);
    expect(r.weights[1]).toBe(1);
  });

  test('the threshold is strict: a ratio equal to 2ε survives, a larger one is masked', () => {
    // ε = 0.125 → τ = 0.25 exactly; (1 − 0.75)/1 = 0.25 is not > τ.
    expect(route([1, 0.75, -3], 0.125).weights[0]).toBeCloseTo(w(1, [1, 0.75]), 7);
    expect(route([1, 0.74, -3], 0.125).weights[0]).toBe(1);
  });

  test('round 2 measures its threshold against the original logits, excluding round 1 winner', () => {
    // Round 2: m = 2.9 (expert 2); expert 1 (2.88): 0.02/2.9 = 0.0069 survives even though
    // expert 0 (3.0) is larger than m (it is excluded, not a candidate).
    const v = [3.0, 2.88, 2.9, 0];
    const r = route(v);
    expect(r.ids).toEqual([0, 2]);
    expect(r.weights[1]).toBeCloseTo(w(2.9, [2.9, 2.88]), 6);
    // round 1: 0.1/3 = 0.033 and 0.12/3 = 0.04 are masked.
    expect(r.weights[0]).toBe(1);
  });

  test('k = 1 and k = 3 apply the same rule per round', () => {
    const v = [2.0, 1.99, 1.985, -1];
    expect(route(v, 0.01, 1)).toEqual({ ids: [0], weights: [Math.fround(w(2, [2, 1.99, 1.985]))], sum: Math.fround(w(2, [2, 1.99, 1.985])) });
    const r3 = route(v, 0.01, 3);
    expect(r3.ids).toEqual([0, 1, 2]);
    expect(r3.weights[1]).toBeCloseTo(w(1.99, [1.99, 1.985]), 6);
    expect(r3.weights[2]).toBeCloseTo(1, 7); // expert 3: 2.985/1.985 masked
  });

  test('many tokens are routed independently', () => {
    const rows = [[10, 1, 0.5, -1], [0.7, 0.7, 0.7, 0.7], [1, 3, 3, 0]];
    const r = sparsemixer(f(rows.flat()), 4, 2, 0.01);
    expect(r.tokens).toBe(3);
    rows.forEach((row, t) => {
      const one = sparsemixer(f(row), 4, 2, 0.01);
      expect([...r.ids.subarray(2 * t, 2 * t + 2)]).toEqual([...one.ids]);
      expect([...r.weights.subarray(2 * t, 2 * t + 2)]).toEqual([...one.weights]);
    });
  });

  test('differs from mlx-lm top-2 softmax, which renormalises', () => {
    const v = f([3.0, 1.0, 0.9, -2.0]);
    expect([...sparsemixer(v, 4, 2, 0.01).weights]).toEqual([1, 1]);
    const mlx = softmaxTopK(v, 4, 2, { renormalize: true });
    expect(mlx.weights[0]).toBeCloseTo(1 / (1 + Math.exp(-2)), 6);
  });

  test('rejects bad arguments', () => {
    const v = f([1, 2, 3, 4]);
    expect(() => sparsemixer(v, 4, 0, 0.01)).toThrow(/k = 0/);
    expect(() => sparsemixer(v, 4, 5, 0.01)).toThrow(/k = 5/);
    expect(() => sparsemixer(v, 3, 2, 0.01)).toThrow(MlxcelError);
    expect(() => sparsemixer(v, 4, 2, -0.1)).toThrow(/jitterEps/);
    expect(() => sparsemixer(f([1, NaN, 0, 0]), 4, 2, 0.01)).toThrow(/token 0, expert 1 is NaN/);
  });
});
