/**
 * randomWeights: deterministic lazy random checkpoints in the HF layout (float or MLX-quantized) that
 * the architectures load as they are (bench --random).
 */
import { describe, expect, it } from 'vitest';
import type { WeightStore } from '@mlxcel/tensor';
import { gemma3n, gemma4, RandomWeights } from '../src/index.js';
import { fixtureDir, loadModel, maxAbsDiff, readConfig } from './helpers.js';

const ids = Int32Array.from([2, 17, 99, 5, 42, 301, 8, 8, 64, 3]);

function run(config: Record<string, unknown>, store: WeightStore): Float32Array {
  const m = loadModel(config, store);
  return m.forward([{ ids, state: m.newState() }])[0]!;
}

describe.each([
  ['gemma3n-tiny', gemma3n],
  ['gemma4-tiny-dense', gemma4],
  ['gemma4-tiny-moe', gemma4],
])('%s config', (name, arch) => {
  const config = readConfig(fixtureDir(name));

  it('float (bf16) random weights load and run; the seed decides the values', () => {
    const a = run(config, arch.randomWeights!(config, { seed: 1 }));
    expect(a.every(Number.isFinite)).toBe(true);
    expect(maxAbsDiff(a, run(config, arch.randomWeights!(config, { seed: 1 })))).toBe(0);
    expect(maxAbsDiff(a, run(config, arch.randomWeights!(config, { seed: 2 })))).toBeGreaterThan(1e-3);
  });

  it('quantized random weights are MLX affine where mlx-lm would quantize, and load without a config block', () => {
    const store = arch.randomWeights!(config, { seed: 3, quantize: { bits: 4, groupSize: 32 } }) as RandomWeights;
    expect(store.quantization).toEqual({ group_size: 32, bits: 4, mode: 'affine' });
    expect(store.get('model.language_model.layers.0.self_attn.q_proj.weight').dtype).toBe('U32');
    expect(store.has('model.language_model.layers.0.self_attn.q_proj.scales')).toBe(true);
    expect(store.get('model.language_model.norm.weight').dtype).toBe('BF16');
    const out = run(config, store);
    expect(out.every(Number.isFinite)).toBe(true);
    // the config's own block, if present, wins and must agree
    expect(maxAbsDiff(out, run({ ...config, quantization: store.quantization }, store))).toBe(0);
  });
});

it('Gemma 3n AltUp coefficient matrices and Gemma 4 MoE experts take the right form', () => {
  const g3 = gemma3n.randomWeights!(readConfig(fixtureDir('gemma3n-tiny')), { quantize: { bits: 4, groupSize: 32 } });
  expect(g3.get('model.language_model.layers.0.altup.prediction_coefs.weight').dtype).toBe('BF16');
  expect(g3.has('model.language_model.layers.5.self_attn.k_proj.weight')).toBe(false); // KV-shared
  const moeCfg = readConfig(fixtureDir('gemma4-tiny-moe'));
  expect(gemma4.randomWeights!(moeCfg).has('model.language_model.layers.0.experts.gate_up_proj')).toBe(true);
  const q = gemma4.randomWeights!(moeCfg, { quantize: { bits: 8, groupSize: 64 } });
  expect(q.get('model.language_model.layers.0.experts.switch_glu.gate_proj.weight').shape).toEqual([8, 64, 16]);
  expect(q.has('model.language_model.layers.5.self_attn.v_proj.weight')).toBe(false); // k_eq_v full layer
});
