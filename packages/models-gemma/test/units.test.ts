/** Small pieces with hand-derived answers: Φ⁻¹, Gaussian top-k, KV-sharing sources, state handling. */
import { describe, expect, it } from 'vitest';
import { normalQuantile } from '../src/index.js';
import { gaussianTopK } from '../src/common/mlp.js';
import { loadFixture, maxAbsDiff } from './helpers.js';

describe('normalQuantile', () => {
  it('Φ⁻¹(0.95) = 1.6448536269514722 (docs/architecture/gemma3n.md §7.3), symmetric, and exact at the center', () => {
    expect(Math.abs(normalQuantile(0.95) - 1.6448536269514722)).toBeLessThan(1e-13);
    expect(Math.abs(normalQuantile(0.05) + 1.6448536269514722)).toBeLessThan(1e-13);
    expect(Math.abs(normalQuantile(0.975) - 1.959963984540054)).toBeLessThan(1e-13);
    expect(Math.abs(normalQuantile(0.5))).toBeLessThan(1e-15);
    expect(Math.abs(normalQuantile(0.999) - 3.090232306167813)).toBeLessThan(1e-12);
    expect(() => normalQuantile(1)).toThrow(RangeError);
  });
});

describe('gaussianTopK uses the population std', () => {
  it('row [1, 2, 3, 4] with z = 1: μ = 2.5, σ = √1.25, cutoff 3.618…', () => {
    const g = Float32Array.of(1, 2, 3, 4, 0, 0, 0, 8);
    gaussianTopK(g, 4, 1);
    const cut1 = 2.5 + Math.sqrt(1.25); // population σ; the N−1 σ would give 3.79 and keep less of the 4
    expect(g[0]).toBe(0);
    expect(g[2]).toBe(0);
    expect(g[3]).toBeCloseTo(4 - cut1, 6);
    // second row [0, 0, 0, 8]: μ = 2, σ = √12, cutoff 2 + 3.4641
    expect(g[7]).toBeCloseTo(8 - (2 + Math.sqrt(12)), 5);
  });
});

describe('forward input checks', () => {
  const { model, expected } = loadFixture('gemma4-tiny-dense');
  const ids = expected.inputIds;
  it('rejects an empty batch, empty ids, a foreign state, a state used twice, out-of-vocabulary ids', () => {
    expect(() => model.forward([])).toThrow(/batch is empty/);
    expect(() => model.forward([{ ids: new Int32Array(0), state: model.newState() }])).toThrow(/ids is empty/);
    const other = loadFixture('gemma3n-tiny').model;
    expect(() => model.forward([{ ids, state: other.newState() }])).toThrow(/not created by this model/);
    const s = model.newState();
    expect(() => model.forward([{ ids, state: s }, { ids, state: s }])).toThrow(/reuses the state/);
    expect(() => model.forward([{ ids: Int32Array.of(2, 512), state: model.newState() }])).toThrow(/ids\[1\] = 512 is outside the vocabulary/);
  });
  it('the same checks and codes as every family (models-core checkBatch), max_position_embeddings included', () => {
    const codeOf = (fn: () => unknown) => {
      try { fn(); } catch (e) { return (e as { code: string }).code; }
      return 'no error';
    };
    expect(codeOf(() => model.forward([]))).toBe('E_INPUT');
    expect(codeOf(() => model.forward([{ ids: Int32Array.of(2, 512), state: model.newState() }]))).toBe('E_INPUT');
    const s = model.newState();
    expect(codeOf(() => model.forward([{ ids, state: s }, { ids, state: s }]))).toBe('E_STATE');
    const tooLong = new Int32Array(model.maxContext + 1).fill(2);
    const fresh = model.newState();
    expect(codeOf(() => model.forward([{ ids: tooLong, state: fresh }]))).toBe('E_CONTEXT');
    expect(fresh.offset).toBe(0); // rejected before any cache was touched
  });
  it("logits: 'last' returns the final row of 'all'", () => {
    const all = model.forward([{ ids, state: model.newState() }])[0]!;
    const last = model.forward([{ ids, state: model.newState() }], { logits: 'last' })[0]!;
    expect(last.length).toBe(model.vocabSize);
    // one row goes through the GEMV kernel, 24 through GEMM: equal to float rounding
    expect(maxAbsDiff(last, all.subarray(all.length - model.vocabSize))).toBeLessThanOrEqual(1e-4);
  });
  it('state: offset, trim, nbytes; unsupported KV storage is refused clearly', () => {
    const s = model.newState();
    model.forward([{ ids, state: s }]);
    expect(s.offset).toBe(24);
    expect(s.nbytes).toBeGreaterThan(0);
    expect(s.trim(4)).toBe(4);
    expect(s.offset).toBe(20);
    expect(() => model.newState({ kvCache: 'q3' })).toThrow(/"q3" is not one of f32, f16, bf16, q8, k8v4/);
    // Every real storage kind builds a working state (quantized ones included).
    for (const kind of ['f16', 'bf16', 'q8', 'k8v4']) {
      const q = model.newState({ kvCache: kind });
      model.forward([{ ids, state: q }]);
      expect(q.offset).toBe(24);
    }
  });
});
