/**
 * Bad checkpoints end in a clear error, never in silently wrong output:
 * - NaN weights: the logits check runs before the soft-cap (c·tanh(z/c) used to turn NaN into −30 in
 *   the vector kernels, so token 0 was emitted forever) and names where NaN first appears;
 * - configs that contradict the tensors present (layer count, MoE flag, per-layer inputs, a short
 *   layer_types list, an AltUp clip ≤ 0) and tensors nothing reads are refused at load.
 */
import { errorOf, MemoryWeights, Tensor } from '@mlxcel/tensor';
import { describe, expect, it } from 'vitest';
import { architectures } from '../src/index.js';
import { copyStore, fixtureDir, loadFixture, loadModel, readConfig } from './helpers.js';

/** The fixture's store with one f32 tensor replaced by a copy holding `value` at element 0 (or everywhere). */
function poisoned(name: string, tensor: string, value: number, everywhere = false): { config: Record<string, unknown>; store: MemoryWeights } {
  const { store, config } = loadFixture(name);
  const m = copyStore(store);
  const t = store.get(tensor);
  const data = t.toF32().slice();
  if (everywhere) data.fill(value);
  else data[0] = value;
  m.set(tensor, Tensor.fromF32(data, t.shape));
  return { config, store: m };
}

const L = 'model.language_model.';

describe('non-finite logits are caught before the soft-cap and located', () => {
  it.each([
    ['gemma3n-tiny', `${L}layers.2.mlp.down_proj.weight`, /layer 2 output/],
    ['gemma4-tiny-dense', `${L}layers.3.mlp.down_proj.weight`, /layer 3 output/],
    ['gemma4-tiny-dense', `${L}layers.1.self_attn.o_proj.weight`, /layer 1 output/],
    ['gemma4-tiny-moe', `${L}embed_tokens.weight`, /the embedding \(embed_tokens\)/],
  ])('%s with NaN in %s', (fixture, tensor, where) => {
    const { config, store } = poisoned(fixture, tensor, NaN, true);
    const model = loadModel(config, store);
    const state = model.newState();
    const e = errorOf(() => model.forward([{ ids: new Int32Array([2, 10, 20, 30]), state }], { logits: 'last' }));
    expect(e.code).toBe('E_NONFINITE_LOGITS');
    expect(e.message).toMatch(/the logits of sequence 0 hold NaN|router logit .* is NaN/);
    expect(e.message).toMatch(where);
    expect(e.message).toMatch(/--check-weights/);
    expect(state.offset).toBe(0);  // the failing step did not advance the state
  });

  it('+Inf in the head is reported, not capped to +softcap', () => {
    const { config, store } = poisoned('gemma3n-tiny', `${L}norm.weight`, Infinity, true);
    const model = loadModel(config, store);
    const e = errorOf(() => model.forward([{ ids: new Int32Array([2, 5]), state: model.newState() }], { logits: 'all' }));
    expect(e.code).toBe('E_NONFINITE_LOGITS');
  });

  it('finite weights still give finite, soft-capped logits (no false alarm)', () => {
    const { model } = loadFixture('gemma3n-tiny');
    const logits = model.forward([{ ids: new Int32Array([2, 10, 20]), state: model.newState() }], { logits: 'all' })[0]!;
    expect(logits.every(Number.isFinite)).toBe(true);
  });
});

describe('config against the checkpoint', () => {
  const text = (cfg: Record<string, unknown>, patch: Record<string, unknown>) => ({
    ...cfg, text_config: { ...(cfg.text_config as Record<string, unknown>), ...patch },
  });

  it('num_hidden_layers: 1e9 is refused by counting the layers present, before anything is allocated', () => {
    const { config, store } = loadFixture('gemma4-tiny-dense');
    const t0 = Date.now();
    const e = errorOf(() => loadModel(text(config, { num_hidden_layers: 1e9 }), store));
    expect(e.message).toMatch(/"text_config\.num_hidden_layers" is 1000000000, but the checkpoint holds 6 decoder layer\(s\)/);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(errorOf(() => loadModel(text(config, { num_hidden_layers: 5 }), store)).message).toMatch(/is 5, but the checkpoint holds 6/);
  });

  it('without a checkpoint (random weights) num_hidden_layers is capped', () => {
    const gemma4 = architectures.find((a) => a.modelTypes.includes('gemma4'))!;
    const e = errorOf(() => gemma4.randomWeights!(text(readConfig(fixtureDir('gemma4-tiny-dense')), { num_hidden_layers: 1e9 })));
    expect(e.message).toMatch(/"text_config\.num_hidden_layers" must be <= 4096, got 1000000000/);
  });

  it('enable_moe_block: false with expert tensors present is refused naming the tensors', () => {
    const { config, store } = loadFixture('gemma4-tiny-moe');
    const e = errorOf(() => loadModel(text(config, { enable_moe_block: false }), store));
    expect(e.code).toBe('E_UNEXPECTED_TENSOR');
    expect(e.message).toMatch(/gemma4: checkpoint has tensors this architecture does not use: model\.language_model\.layers\.0\.(experts|router)/);
  });

  it('hidden_size_per_layer_input: 0 with per-layer weights present is refused', () => {
    const { config, store } = loadFixture('gemma4-tiny-dense');
    const e = errorOf(() => loadModel(text(config, { hidden_size_per_layer_input: 0 }), store));
    expect(e.code).toBe('E_UNEXPECTED_TENSOR');
    expect(e.message).toMatch(/embed_tokens_per_layer|per_layer/);
  });

  it('a tensor nothing reads is refused; multimodal towers and a tied lm_head are not', () => {
    const { config, store } = loadFixture('gemma3n-tiny');
    const extra = copyStore(store);
    extra.set(`${L}layers.0.mlp.surprise.weight`, Tensor.fromF32(new Float32Array(4), [2, 2]));
    expect(errorOf(() => loadModel(config, extra)).message).toMatch(/does not use: model\.language_model\.layers\.0\.mlp\.surprise\.weight/);
    const outside = copyStore(store);
    outside.set('model.layers.0.surprise.weight', Tensor.fromF32(new Float32Array(4), [2, 2]));
    expect(errorOf(() => loadModel(config, outside)).message).toMatch(/does not use: model\.layers\.0\.surprise\.weight/);
    const towers = copyStore(store);
    towers.set('model.vision_tower.x.weight', Tensor.fromF32(new Float32Array(4), [2, 2]));
    towers.set('lm_head.weight', store.get(`${L}embed_tokens.weight`));
    expect(() => loadModel(config, towers)).not.toThrow();
  });

  it('altup_coef_clip <= 0 is refused', () => {
    const { config, store } = loadFixture('gemma3n-tiny');
    for (const v of [-1, 0])
      expect(errorOf(() => loadModel(text(config, { altup_coef_clip: v }), store)).message).toMatch(
        new RegExp(`"text_config\\.altup_coef_clip" must be > 0 or null, got ${v}`),
      );
  });

  it('layer_types shorter than the layer count is refused for a checkpoint folder (padding stays for random test configs)', () => {
    const config = readConfig(fixtureDir('gemma4-tiny-dense'));
    const { store } = loadFixture('gemma4-tiny-dense');
    const types = (config.text_config as { layer_types: string[] }).layer_types;
    const short = text(config, { layer_types: types.slice(0, 4) });
    const gemma4 = architectures.find((a) => a.modelTypes.includes('gemma4'))!;
    expect(errorOf(() => gemma4.load({ dir: fixtureDir('gemma4-tiny-dense'), config: short, weights: store })).message).toMatch(
      /"text_config\.layer_types" has 4 entries for 6 layers/,
    );
  });
});
