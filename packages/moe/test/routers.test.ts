// softmax-then-top-k (with and without renormalisation) and the Gemma 4 router.
import { describe, expect, test } from 'vitest';
import { MemoryWeights, reference, Tensor, Weight } from '@mlxcel/tensor';
import { gemma4Route, Gemma4Router, softmaxTopK } from '../src/index.js';
import { rng, uniform } from './helpers.js';

const f = (v: number[]) => Float32Array.from(v);

describe('softmaxTopK', () => {
  const v = [1.0, 3.0, 2.0, 0.5];
  const z = v.reduce((a, s) => a + Math.exp(s), 0);

  test('without renormalisation the weights are the full softmax probabilities', () => {
    const r = softmaxTopK(f(v), 4, 2, { renormalize: false });
    expect([...r.ids]).toEqual([1, 2]);
    expect(r.weights[0]).toBeCloseTo(Math.exp(3) / z, 6);
    expect(r.weights[1]).toBeCloseTo(Math.exp(2) / z, 6);
  });

  test('with renormalisation the k weights sum to 1 (= softmax over the selected logits)', () => {
    const r = softmaxTopK(f(v), 4, 2);
    expect(r.weights[0]).toBeCloseTo(1 / (1 + Math.exp(-1)), 6);
    expect(r.weights[0]! + r.weights[1]!).toBeCloseTo(1, 6);
  });

  test('ties go to the lower index', () => {
    const r = softmaxTopK(f([0.5, 2, 2, 2]), 4, 2);
    expect([...r.ids]).toEqual([1, 2]);
    expect([...r.weights]).toEqual([0.5, 0.5]);
  });

  test('several tokens, k = E', () => {
    const r = softmaxTopK(f([0, 1, 2, 2, 1, 0]), 3, 3, { renormalize: false });
    expect([...r.ids]).toEqual([2, 1, 0, 0, 1, 2]);
    expect(r.weights[0]! + r.weights[1]! + r.weights[2]!).toBeCloseTo(1, 6);
  });
});

describe('Gemma 4 router', () => {
  test('gemma4Route: softmax over all, top-k, renormalise, then the per-expert scale', () => {
    const logits = [0.2, 1.5, -0.3, 1.1];
    const pes = f([0.5, 2.0, 1.0, 0.25]);
    const r = gemma4Route(f(logits), 4, 2, pes);
    expect([...r.ids]).toEqual([1, 3]);
    const p1 = Math.exp(1.5), p3 = Math.exp(1.1);
    expect(r.weights[0]).toBeCloseTo((p1 / (p1 + p3)) * 2.0, 6);
    expect(r.weights[1]).toBeCloseTo((p3 / (p1 + p3)) * 0.25, 6);
  });

  test('logits from the un-normalised residual: (RMS0(h) ⊙ scale) · H^-0.5 · W_rᵀ', () => {
    const E = 6, H = 32, T = 5, r = rng(3);
    const proj = uniform(E * H, r), scale = uniform(H, r, 2), pes = uniform(E, r).map((x) => 1 + x / 2);
    const h = uniform(T * H, r, 40); // Gemma residuals are large
    const store = new MemoryWeights();
    store.set('L.router.proj.weight', Tensor.fromF32(proj, [E, H]));
    store.set('L.router.scale', Tensor.fromF32(scale, [H]));
    store.set('L.router.per_expert_scale', Tensor.fromF32(pes, [E]));
    const router = Gemma4Router.load(store, 'L', { numExperts: E, topK: 3, hidden: H, eps: 1e-6 });
    const got = router.logits(h, T);
    const z = reference.rmsNorm(h, H, null, 1e-6).map((v, i) => v * scale[i % H]! * H ** -0.5);
    const want = reference.matmul(z, T, H, proj, E);
    for (let i = 0; i < want.length; i++) expect(got[i]).toBeCloseTo(want[i]!, 4);
    const routed = router.route(h, T);
    const direct = gemma4Route(got, E, 3, pes);
    expect([...routed.ids]).toEqual([...direct.ids]);
    expect([...routed.weights]).toEqual([...direct.weights]);
  });

  test('load checks shapes and top_k_experts', () => {
    const store = new MemoryWeights();
    store.set('L.router.proj.weight', Tensor.fromF32(new Float32Array(4 * 8), [4, 8]));
    store.set('L.router.scale', Tensor.fromF32(new Float32Array(8), [8]));
    store.set('L.router.per_expert_scale', Tensor.fromF32(new Float32Array(3), [3]));
    expect(() => Gemma4Router.load(store, 'L', { numExperts: 4, topK: 2, hidden: 8, eps: 1e-6 })).toThrow(/per_expert_scale/);
    expect(() => Gemma4Router.load(store, 'L', { numExperts: 5, topK: 2, hidden: 8, eps: 1e-6 })).toThrow(/num_experts = 5/);
    const ok = new Gemma4Router(Weight.fromF32(new Float32Array(32), [4, 8]), new Float32Array(8), new Float32Array(4), 2, 1e-6);
    expect(ok.numExperts).toBe(4);
    expect(() => new Gemma4Router(Weight.fromF32(new Float32Array(32), [4, 8]), new Float32Array(8), new Float32Array(4), 5, 1e-6)).toThrow(/top_k_experts = 5/);
  });
});
