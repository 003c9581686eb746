/** Missing, unexpected, mis-shaped and wrongly quantized tensors fail at load naming the tensor. */
import { describe, expect, it } from 'vitest';
import { MemoryWeights, Tensor, type WeightStore } from '@mlxcel/tensor';
import { fixture, loadModel } from './helpers.js';

function copy(store: WeightStore, edit: (m: MemoryWeights) => void = () => {}): MemoryWeights {
  const m = new MemoryWeights();
  for (const k of store.keys()) m.set(k, store.get(k));
  edit(m);
  return m;
}

function drop(store: WeightStore, name: string): MemoryWeights {
  const m = new MemoryWeights();
  for (const k of store.keys()) if (k !== name) m.set(k, store.get(k));
  return m;
}

function loadError(config: Record<string, unknown>, weights: WeightStore): { code: string; message: string } {
  try {
    loadModel(config, weights);
  } catch (e) {
    return e as { code: string; message: string };
  }
  throw new Error('expected the load to fail');
}

describe('phi3', () => {
  const fx = fixture('phi3-tiny-short');
  it('a missing tensor is named', () => {
    const e = loadError(fx.config, drop(fx.weights, 'model.layers.1.mlp.down_proj.weight'));
    expect(e.code).toBe('E_MISSING_TENSOR');
    expect(e.message).toContain('model.layers.1.mlp.down_proj.weight');
  });
  it('an extra tensor (a layer the config does not have) is named', () => {
    const e = loadError(fx.config, copy(fx.weights, (m) => m.set('model.layers.3.mlp.down_proj.weight', fx.weights.get('model.layers.0.mlp.down_proj.weight'))));
    expect(e.code).toBe('E_UNEXPECTED_TENSOR');
    expect(e.message).toContain('model.layers.3.mlp.down_proj.weight');
  });
  it('fewer layers in the config than in the checkpoint is an error, not a silent truncation', () => {
    const e = loadError({ ...fx.config, num_hidden_layers: 2 }, fx.weights);
    expect(e.code).toBe('E_UNEXPECTED_TENSOR');
    expect(e.message).toContain('model.layers.2.');
  });
  it('a bias where the architecture has none is named', () => {
    const e = loadError(fx.config, copy(fx.weights, (m) => m.set('model.layers.0.self_attn.o_proj.bias', Tensor.fromF32(new Float32Array(128), [128]))));
    expect(e.code).toBe('E_UNEXPECTED_TENSOR');
    expect(e.message).toContain('model.layers.0.self_attn.o_proj.bias');
  });
  it('a shape that disagrees with the config names the tensor', () => {
    const e = loadError({ ...fx.config, intermediate_size: 128 }, fx.weights);
    expect(e.code).toBe('E_SHAPE');
    expect(e.message).toContain('model.layers.0.mlp.gate_up_proj');
  });
  it('tied config with an lm_head in the checkpoint: lm_head.weight is unexpected', () => {
    const e = loadError({ ...fx.config, tie_word_embeddings: true }, fx.weights);
    expect(e.code).toBe('E_UNEXPECTED_TENSOR');
    expect(e.message).toContain('lm_head.weight');
  });
  it('rotary_emb.inv_freq buffers of old checkpoints are dropped', () => {
    const w = copy(fx.weights, (m) => m.set('model.layers.0.self_attn.rotary_emb.inv_freq', Tensor.fromF32(new Float32Array(16), [16])));
    expect(() => loadModel(fx.config, w)).not.toThrow();
  });
});

describe('phimoe', () => {
  const fx = fixture('phimoe-tiny');
  const q4 = fixture('phimoe-tiny-q4-mlx');
  it('a router whose rows disagree with num_local_experts is named', () => {
    const e = loadError({ ...fx.config, num_local_experts: 4 }, fx.weights);
    expect(e.code).toBe('E_SHAPE');
    expect(e.message).toContain('model.layers.0.block_sparse_moe.gate');
  });
  it('more experts in the checkpoint than num_local_experts is an error', () => {
    // Routers cut to 4 rows so that the expert tensors are what disagrees.
    const w = copy(fx.weights, (m) => {
      for (const l of [0, 1]) {
        const name = `model.layers.${l}.block_sparse_moe.gate.weight`;
        m.set(name, Tensor.fromF32(fx.weights.get(name).toF32().slice(0, 4 * 128), [4, 128]));
      }
    });
    const e = loadError({ ...fx.config, num_local_experts: 4 }, w);
    expect(e.message).toContain('model.layers.0.block_sparse_moe.experts.4.w1.weight');
  });
  it('fewer experts in the checkpoint than num_local_experts names a missing expert tensor', () => {
    const e = loadError(fx.config, drop(fx.weights, 'model.layers.1.block_sparse_moe.experts.5.w3.weight'));
    expect(e.code).toBe('E_MISSING_TENSOR');
    expect(e.message).toContain('model.layers.1.block_sparse_moe.experts.5.w3.weight');
  });
  it('stacked experts with a leading dim other than num_local_experts are rejected', () => {
    const e = loadError({ ...q4.config, num_local_experts: 6, num_experts_per_tok: 2 }, q4.weights);
    expect(e.code).toBe('E_SHAPE');
  });
  it('attention biases are required when attention_bias is true', () => {
    const e = loadError(fx.config, drop(fx.weights, 'model.layers.0.self_attn.k_proj.bias'));
    expect(e.code).toBe('E_MISSING_TENSOR');
    expect(e.message).toContain('model.layers.0.self_attn.k_proj.bias');
  });
  it('lm_head.bias is unexpected when lm_head_bias is false', () => {
    const e = loadError({ ...fx.config, lm_head_bias: false }, fx.weights);
    expect(e.code).toBe('E_UNEXPECTED_TENSOR');
    expect(e.message).toContain('lm_head.bias');
  });
  it('quantized tensors without a quantization block in the config', () => {
    const { quantization: _a, quantization_config: _b, ...cfg } = q4.config;
    const e = loadError(cfg, q4.weights);
    expect(e.code).toBe('E_QUANT');
    expect(e.message).toMatch(/scales/);
  });
  it('unsupported quantization bits', () => {
    const e = loadError({ ...q4.config, quantization: { group_size: 64, bits: 7 }, quantization_config: undefined }, q4.weights);
    expect(e.code).toBe('E_QUANT');
    expect(e.message).toMatch(/bits 7/);
  });
  it('bits that do not fit the packed width (wrong config) are rejected', () => {
    const e = loadError({ ...q4.config, quantization: { group_size: 64, bits: 8 }, quantization_config: undefined }, q4.weights);
    expect(e.code).toBe('E_QUANT');
  });
});

describe('phi3small', () => {
  const fx = fixture('phi3small-tiny');
  it('a missing Linear bias is named', () => {
    const e = loadError(fx.config, drop(fx.weights, 'model.layers.2.mlp.up_proj.bias'));
    expect(e.code).toBe('E_MISSING_TENSOR');
    expect(e.message).toContain('model.layers.2.mlp.up_proj.bias');
  });
  it('a missing LayerNorm bias is named', () => {
    const e = loadError(fx.config, drop(fx.weights, 'model.final_layernorm.bias'));
    expect(e.message).toContain('model.final_layernorm.bias');
  });
  it('untied config without lm_head names lm_head.weight', () => {
    const e = loadError({ ...fx.config, tie_word_embeddings: false }, fx.weights);
    expect(e.message).toContain('lm_head.weight');
  });
});
