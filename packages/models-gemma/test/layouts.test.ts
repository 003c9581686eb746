/**
 * One text model for every layout: the HF multimodal prefix (`model.language_model.`), text-only
 * checkpoints (`model.`, model_type gemma*_text, keys at the config's top level), mlx-vlm
 * (`language_model.model.`), an untied `lm_head`, and load errors naming the missing tensor.
 */
import { describe, expect, it } from 'vitest';
import { MemoryWeights, MlxcelError, type WeightStore } from '@mlxcel/tensor';
import { architectures } from '../src/index.js';
import { without, withTensors } from './convert.js';
import { loadFixture, loadModel, maxAbsDiff } from './helpers.js';

const P = 'model.language_model.';

function renamed(store: WeightStore, to: string): MemoryWeights {
  const m = new MemoryWeights();
  for (const k of store.keys()) m.set(k.startsWith(P) ? to + k.slice(P.length) : k, store.get(k));
  return m;
}

it('architectures cover gemma3n, gemma3n_text, gemma4, gemma4_text', () => {
  expect(architectures.flatMap((a) => a.modelTypes).sort()).toEqual(['gemma3n', 'gemma3n_text', 'gemma4', 'gemma4_text']);
  expect(architectures.every((a) => typeof a.randomWeights === 'function')).toBe(true);
});

describe.each([
  ['gemma3n-tiny', 'gemma3n_text'],
  ['gemma4-tiny-dense', 'gemma4_text'],
  ['gemma4-tiny-moe', 'gemma4_text'],
])('%s', (name, textType) => {
  const { config, store, expected, model } = loadFixture(name);
  const ids = expected.inputIds;
  const ref = model.forward([{ ids, state: model.newState() }])[0]!;
  const run = (c: Record<string, unknown>, s: WeightStore) => {
    const m = loadModel(c, s);
    return m.forward([{ ids, state: m.newState() }])[0]!;
  };

  it(`text-only checkpoint (${textType}, prefix "model.", flat config) == multimodal checkpoint`, () => {
    const flat = { ...(config.text_config as object), model_type: textType };
    const m = loadModel(flat, renamed(store, 'model.'));
    expect(m.modelType).toBe(textType);
    expect(maxAbsDiff(m.forward([{ ids, state: m.newState() }])[0]!, ref)).toBe(0);
  });

  it('mlx-vlm prefix "language_model.model." == HF prefix', () => {
    expect(maxAbsDiff(run(config, renamed(store, 'language_model.model.')), ref)).toBe(0);
  });

  it('tie_word_embeddings false reads lm_head.weight (and requires it)', () => {
    const untied = { ...config, tie_word_embeddings: false };
    const head = withTensors(store, { 'lm_head.weight': store.get(`${P}embed_tokens.weight`) });
    expect(maxAbsDiff(run(untied, head), ref)).toBe(0);
    expect(() => loadModel(untied, store)).toThrow(/lm_head\.weight/);
  });

  it.each(['norm.weight', 'layers.1.mlp.up_proj.weight', 'layers.0.input_layernorm.weight'])('missing %s fails naming it', (t) => {
    const err = (() => {
      try {
        loadModel(config, without(store, (k) => k === P + t));
      } catch (e) {
        return e as MlxcelError;
      }
      throw new Error('loaded without ' + t);
    })();
    expect(err).toBeInstanceOf(MlxcelError);
    expect(err.code).toBe('E_MISSING_TENSOR');
    expect(err.message).toContain(P + t);
  });

  it('a tensor with the wrong shape fails naming it and the expected shape', () => {
    const badQ = withTensors(store, { [`${P}layers.0.self_attn.q_proj.weight`]: store.get(`${P}layers.0.self_attn.o_proj.weight`) });
    expect(() => loadModel(config, badQ)).toThrow(/layers\.0\.self_attn\.q_proj\.weight: shape/);
  });

  it('no embed_tokens under any known prefix is reported', () => {
    expect(() => loadModel(config, renamed(store, 'foo.'))).toThrow(/embed_tokens\.weight/);
  });
});

it('Gemma 4 MoE: a missing expert tensor fails at load naming it', () => {
  const { config, store } = loadFixture('gemma4-tiny-moe');
  expect(() => loadModel(config, without(store, (k) => k === `${P}layers.2.experts.down_proj`))).toThrow(/layers\.2\.experts\.down_proj/);
  expect(() => loadModel(config, without(store, (k) => k === `${P}layers.2.router.per_expert_scale`))).toThrow(/layers\.2\.router\.per_expert_scale/);
});

it('stats: parameters and per-token bytes (only top-k of the experts are streamed)', () => {
  const { model, store } = loadFixture('gemma4-tiny-moe');
  let total = 0;
  for (const k of store.keys()) total += store.get(k).size;
  expect(model.stats.parameters).toBe(total);
  expect(model.stats.weightBytes).toBeLessThan(total * 4);
  expect(model.stats.weightBytes).toBeGreaterThan(0);
});
