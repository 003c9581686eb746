/**
 * NaN/Inf in a Phi checkpoint: the logits check names where non-finite values first appear (the MoE
 * router's own NaN check included), and a config with rope_scaling null / absent beyond the original
 * context runs plain RoPE, as Hugging Face does.
 */
import { errorOf, MemoryWeights, Tensor, type WeightStore } from '@mlxcel/tensor';
import { describe, expect, it } from 'vitest';
import { fixture, loadModel } from './helpers.js';

function withNaN(store: WeightStore, name: string): MemoryWeights {
  const m = new MemoryWeights();
  for (const k of store.keys()) m.set(k, store.get(k));
  const t = store.get(name);
  m.set(name, Tensor.fromF32(t.toF32().fill(NaN), t.shape));
  return m;
}

describe('non-finite values are located', () => {
  it.each([
    ['phi3-tiny-short', 'model.layers.1.mlp.down_proj.weight', /first appear in layer 1 output \(layers\.1\.\*\)/],
    ['phi3-tiny-short', 'model.embed_tokens.weight', /first appear in the embedding/],
    ['phimoe-tiny', 'model.layers.1.self_attn.o_proj.weight', /first appear in layer 1 output|router logit/],
  ])('%s with NaN in %s', (name, tensor, where) => {
    const fx = fixture(name);
    const model = loadModel(fx.config, withNaN(fx.weights, tensor));
    const e = errorOf(() => model.forward([{ ids: new Int32Array([1, 5, 9]), state: model.newState() }], { logits: 'last' }));
    expect(e.code).toBe('E_NONFINITE_LOGITS');
    expect(e.message).toMatch(where);
  });
});

describe('num_hidden_layers against the checkpoint', () => {
  it.each([1e9, 5, 4])('%s is refused before anything per-layer is built', (n) => {
    const fx = fixture('phi3-tiny-short');
    const t0 = Date.now();
    const e = errorOf(() => loadModel({ ...fx.config, num_hidden_layers: n }, fx.weights));
    expect(e.message).toMatch(/phi3 config\.json: "num_hidden_layers" (must be <= 4096|is \d+, but the checkpoint holds 3 decoder layer)/);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe('rope_scaling null or absent keeps plain RoPE (HF)', () => {
  it.each([['null', null], ['absent', undefined]])('phi3 with rope_scaling %s past original_max_position_embeddings loads and runs', (_n, rs) => {
    const fx = fixture('phi3-tiny-short');
    const config: Record<string, unknown> = { ...fx.config };
    if (rs === undefined) delete config.rope_scaling;
    else config.rope_scaling = rs;
    expect(config.max_position_embeddings as number).toBeGreaterThan(config.original_max_position_embeddings as number);
    const model = loadModel(config, fx.weights);
    const logits = model.forward([{ ids: new Int32Array([1, 5, 9]), state: model.newState() }], { logits: 'last' })[0]!;
    expect(logits.every(Number.isFinite)).toBe(true);
  });
});
