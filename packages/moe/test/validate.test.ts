import { describe, expect, test } from 'vitest';
import { activationOf, validateMoeConfig } from '../src/index.js';

describe('validateMoeConfig', () => {
  test('accepts 1 ≤ k ≤ E', () => {
    expect(validateMoeConfig({ numExperts: 16, topK: 2, router: 'sparsemixer', jitterEps: 0.01 })).toEqual({ numExperts: 16, topK: 2, jitterEps: 0.01 });
    expect(validateMoeConfig({ numExperts: 4, topK: 4, router: 'softmax-topk' })).toEqual({ numExperts: 4, topK: 4 });
    expect(validateMoeConfig({ numExperts: 1, topK: 1, router: 'gemma4' })).toEqual({ numExperts: 1, topK: 1 });
  });

  test('k = 0 and k > E fail naming both keys', () => {
    expect(() => validateMoeConfig({ numExperts: 16, topK: 0, router: 'softmax-topk' })).toThrow(
      expect.objectContaining({ code: 'E_CONFIG', message: expect.stringMatching(/num_experts_per_tok = 0.*num_local_experts = 1\.\.16/) }),
    );
    expect(() => validateMoeConfig({ numExperts: 16, topK: 17, router: 'softmax-topk' })).toThrow(/num_experts_per_tok = 17 exceeds num_local_experts = 16/);
    expect(() => validateMoeConfig({ numExperts: 128, topK: 129, router: 'gemma4', keys: { numExperts: 'num_experts', topK: 'top_k_experts' } })).toThrow(
      /top_k_experts = 129 exceeds num_experts = 128/,
    );
  });

  test('non-integers and missing keys', () => {
    expect(() => validateMoeConfig({ numExperts: 8, topK: 1.5, router: 'softmax-topk' })).toThrow(/num_experts_per_tok must be an integer in 1..num_local_experts \(8\), got 1.5/);
    expect(() => validateMoeConfig({ numExperts: undefined, topK: 2, router: 'softmax-topk' })).toThrow(/num_local_experts must be an integer >= 1, got undefined/);
    expect(() => validateMoeConfig({ numExperts: 0, topK: 0, router: 'softmax-topk' })).toThrow(/num_local_experts/);
    expect(() => validateMoeConfig({ numExperts: 8, topK: '2', router: 'softmax-topk' })).toThrow(/got "2"/);
  });

  test('sparsemixer needs router_jitter_noise > 0; other routers ignore it', () => {
    for (const bad of [0, -0.01, undefined, Number.NaN, Infinity, '0.01'])
      expect(() => validateMoeConfig({ numExperts: 16, topK: 2, router: 'sparsemixer', jitterEps: bad })).toThrow(/router_jitter_noise = .* needs a finite value > 0/);
    expect(validateMoeConfig({ numExperts: 16, topK: 2, router: 'softmax-topk', jitterEps: 0 })).toEqual({ numExperts: 16, topK: 2 });
  });
});

test('activationOf maps config names', () => {
  expect(activationOf('silu')).toBe('silu');
  expect(activationOf('gelu_pytorch_tanh')).toBe('gelu_tanh');
  expect(() => activationOf('relu2')).toThrow(/"relu2" is not supported/);
});
