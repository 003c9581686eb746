/**
 * Storage layouts the fixtures do not cover, built by converting each fixture checkpoint:
 *  - bf16: every float tensor rounded to BF16 (core-native fromF32).
 *  - q8/g32: MLX affine 8-bit, group 32 (QuantizedWeight.quantize), in the mlx-community layout (PhiMoE
 *    experts stacked as switch_mlp), scales in f32.
 *  - mixed: q8/g32 with per-module overrides (one down_proj at 4-bit/g64, lm_head left float).
 * Each converted model must match an f32 model built from its own upcast/dequantized weights to within
 * 1e-4 (the kernels convert exactly; only summation order differs: this is the strict check of loading).
 * Against the original f32 fixture reference the looser, stated tolerances are max |Δ logit| ≤ 0.15 for
 * bf16 and ≤ 0.4 for q8/g32 on logits of magnitude ≤ 10 (measured maxima: bf16 0.05–0.10, q8 0.12–0.25;
 * MLX's quantizer makes the group's larger edge exact and can be a full step off at the other edge),
 * with greedy ids unchanged. PhiMoE routing is discontinuous (a relative gap of 2ε decides), so rounding
 * flips some routes: there the rows before the first changed routing decision are compared.
 */
import { describe, expect, it } from 'vitest';
import { MemoryWeights, QuantizedWeight, Tensor, quantParamsFor, quantConfigOf, type WeightStore } from '@mlxcel/tensor';
import { convertPhiCheckpoint, type PhiMoEModel } from '../src/index.js';
import type { LanguageModel } from '@mlxcel/tensor';
import { fixture, fullLogits, greedy, loadModel, maxAbsDiff } from './helpers.js';

/** The same checkpoint with every tensor as f32 (BF16 upcast, MLX triplets dequantized). */
function toF32Store(config: Record<string, unknown>, store: WeightStore): WeightStore {
  const out = new MemoryWeights();
  const q = quantConfigOf(config);
  for (const name of store.keys()) {
    if (name.endsWith('.scales') || name.endsWith('.biases')) continue;
    const t = store.get(name);
    const path = name.slice(0, -'.weight'.length);
    if (name.endsWith('.weight') && store.has(`${path}.scales`)) {
      const w = QuantizedWeight.fromTensors(t, store.get(`${path}.scales`), store.get(`${path}.biases`), quantParamsFor(q, path)!, path);
      out.set(name, Tensor.fromF32(w.dequantize(), w.shape));
    } else out.set(name, Tensor.fromF32(t.toF32().slice(), t.shape));
  }
  return out;
}

function stripQuant(config: Record<string, unknown>): Record<string, unknown> {
  const { quantization: _a, quantization_config: _b, ...rest } = config;
  return rest;
}

const CASES = ['phi3-tiny-short', 'phi3-tiny-long', 'phimoe-tiny', 'phi3small-tiny'];
const TOL = { bf16: 0.15, q8: 0.4 };

/**
 * Compares a converted model with the f32 reference logits: all rows for dense models; for PhiMoE only
 * the rows before the first token whose expert choice (any layer) differs from the reference routing.
 */
function compareToReference(model: LanguageModel, fx: ReturnType<typeof fixture>, tol: number): void {
  const prompt = fx.i32('input_ids');
  const ref = fx.f32('logits');
  const V = model.vocabSize, T = prompt.length;
  let rows = T;
  if (model.modelType === 'phimoe') {
    const exp = fx.i32('routing_experts');
    const moe = model as PhiMoEModel;
    moe.routingObserver = (l, r) => {
      for (let t = 0; t < T; t++)
        if (r.ids[2 * t] !== exp[(l * T + t) * 2] || r.ids[2 * t + 1] !== exp[(l * T + t) * 2 + 1]) rows = Math.min(rows, t);
    };
  }
  const logits = fullLogits(model, prompt);
  if (model.modelType === 'phimoe') (model as PhiMoEModel).routingObserver = null;
  expect(rows).toBeGreaterThan(0);
  expect(maxAbsDiff(logits.subarray(0, rows * V), ref.subarray(0, rows * V))).toBeLessThanOrEqual(tol);
  if (model.modelType !== 'phimoe') {
    const suppress = model.modelType === 'phi3small';
    expect([...greedy(model, prompt, 8, { suppress }).ids]).toEqual([...fx.i32('greedy_ids')]);
  }
}

describe.each(CASES)('%s converted', (name) => {
  const fx = fixture(name);
  const prompt = fx.i32('input_ids');

  it('bf16 weights load, run, and equal the f32 model on the upcast weights', () => {
    const c = convertPhiCheckpoint(fx.config, fx.weights, { dtype: 'BF16' });
    expect(c.weights.get('model.embed_tokens.weight').dtype).toBe('BF16');
    const model = loadModel(c.config, c.weights);
    const logits = fullLogits(model, prompt);
    const upcast = fullLogits(loadModel(c.config, toF32Store(c.config, c.weights)), prompt);
    expect(maxAbsDiff(logits, upcast)).toBeLessThanOrEqual(1e-4);
    compareToReference(model, fx, TOL.bf16);
  });

  it('8-bit group-32 MLX quantization loads, runs, and equals the f32 model on the dequantized weights', () => {
    const c = convertPhiCheckpoint(fx.config, fx.weights, { quantize: { bits: 8, groupSize: 32 } });
    expect(c.weights.get('model.embed_tokens.weight').dtype).toBe('U32');
    expect(c.config.quantization).toMatchObject({ bits: 8, group_size: 32 });
    const model = loadModel(c.config, c.weights);
    const logits = fullLogits(model, prompt);
    const deq = fullLogits(loadModel(stripQuant(c.config), toF32Store(c.config, c.weights)), prompt);
    expect(maxAbsDiff(logits, deq)).toBeLessThanOrEqual(1e-4);
    compareToReference(model, fx, TOL.q8);
  });

  it('per-module overrides: one layer at 4-bit/g64, one module left float', () => {
    const mt = fx.config.model_type;
    // A module whose input dim is a multiple of 64 (Phi-3-small-tiny's down_proj has 80 inputs).
    const down = mt === 'phimoe' ? 'model.layers.0.block_sparse_moe.switch_mlp.down_proj'
      : mt === 'phi3small' ? 'model.layers.0.mlp.up_proj' : 'model.layers.0.mlp.down_proj';
    const keepFloat = mt === 'phi3small' ? 'model.layers.1.self_attn.dense' : 'lm_head';
    const c = convertPhiCheckpoint(fx.config, fx.weights, {
      quantize: { bits: 8, groupSize: 32, overrides: { [down]: { bits: 4, groupSize: 64 }, [keepFloat]: false } },
    });
    expect(c.weights.has(`${keepFloat}.scales`)).toBe(false);
    expect(c.weights.get(`${down}.weight`).shape.at(-1)).toBe((c.weights.get(`${down}.scales`).shape.at(-1)! * 64 * 4) / 32);
    const model = loadModel(c.config, c.weights);
    const deq = fullLogits(loadModel(stripQuant(c.config), toF32Store(c.config, c.weights)), prompt);
    expect(maxAbsDiff(fullLogits(model, prompt), deq)).toBeLessThanOrEqual(1e-4);
  });
});
