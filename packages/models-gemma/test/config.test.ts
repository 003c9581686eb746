/**
 * Config parsing: the real configs, the layer_types padding rule, per-layer KV geometry, KV-sharing
 * sources, and errors that name the offending key.
 */
import { describe, expect, it } from 'vitest';
import { ModelConfigError, parseGemma3nConfig, parseGemma4Config } from '../src/index.js';
import { fixtureDir, readConfig, realConfig } from './helpers.js';

const S = 'sliding_attention', F = 'full_attention';

function text(config: Record<string, unknown>, patch: Record<string, unknown>, drop: string[] = []): Record<string, unknown> {
  const t: Record<string, unknown> = { ...(config.text_config as object), ...patch };
  for (const k of drop) delete t[k];
  return { ...config, text_config: t };
}

function errorOf(fn: () => unknown): ModelConfigError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ModelConfigError) return e;
    throw e;
  }
  throw new Error('expected a ModelConfigError');
}

describe('real Gemma 4 configs', () => {
  it('gemma-4-E2B-it: 35 layers, 20 KV-shared reading 13 (sliding) / 14 (full), double-wide MLP, PLE', () => {
    const c = parseGemma4Config(realConfig('gemma-4-E2B-it'));
    expect(c.numLayers).toBe(35);
    expect(c.layerTypes.filter((t) => t === F).length).toBe(7);
    expect(c.kvSources.slice(0, 15)).toEqual([...Array(15).keys()]);
    expect(new Set(c.kvSources.slice(15).map((s, i) => `${c.layerTypes[15 + i]}:${s}`))).toEqual(new Set([`${S}:13`, `${F}:14`]));
    expect(c.intermediateSizes[14]).toBe(6144);
    expect(c.intermediateSizes[15]).toBe(12288);
    expect(c.headDims[0]).toBe(256);
    expect(c.headDims[4]).toBe(512);
    expect(c.numKvHeads.every((g) => g === 1)).toBe(true);
    expect(c.kEqV.some(Boolean)).toBe(false);
    expect(c.hiddenSizePerLayerInput).toBe(256);
    expect(c.moe).toBeNull();
    expect(c.finalLogitSoftcapping).toBe(30);
  });

  it('gemma-4-E4B-it: 42 layers, 18 KV-shared reading 22 / 23', () => {
    const c = parseGemma4Config(realConfig('gemma-4-E4B-it'));
    expect(c.numLayers).toBe(42);
    expect(new Set(c.kvSources.slice(24).map((s, i) => `${c.layerTypes[24 + i]}:${s}`))).toEqual(new Set([`${S}:22`, `${F}:23`]));
    expect(c.intermediateSizes.every((i) => i === 10240)).toBe(true); // use_double_wide_mlp false
    expect(c.numKvHeads[0]).toBe(2);
  });

  it('gemma-4-31B-it: global KV heads 4 × 512 on full layers, 16 × 256 sliding, k_eq_v on full layers only', () => {
    const c = parseGemma4Config(realConfig('gemma-4-31B-it'));
    expect(c.numLayers).toBe(60);
    const full = c.layerTypes.indexOf(F);
    expect(full).toBe(5);
    expect([c.numKvHeads[0], c.headDims[0], c.kEqV[0]]).toEqual([16, 256, false]);
    expect([c.numKvHeads[full], c.headDims[full], c.kEqV[full]]).toEqual([4, 512, true]);
    expect(c.numKvSharedLayers).toBe(0);
    expect(c.hiddenSizePerLayerInput).toBe(0);
    expect(c.slidingWindow).toBe(1024);
  });
});

describe('real Gemma 3n config (unsloth/gemma-3n-E2B-it)', () => {
  it('30 layers, 10 KV-shared reading 18 / 19, sparsity 0.95 on the first 10', () => {
    const c = parseGemma3nConfig(realConfig('unsloth--gemma-3n-E2B-it'));
    expect(c.numLayers).toBe(30);
    expect(c.hiddenSize).toBe(2048);
    expect(c.vocabSize).toBe(262400);
    expect(c.vocabSizePerLayerInput).toBe(262144);
    expect(new Set(c.kvSources.slice(20).map((s, i) => `${c.layerTypes[20 + i]}:${s}`))).toEqual(new Set([`${S}:18`, `${F}:19`]));
    expect(c.activationSparsity.slice(0, 10).every((s) => s === 0.95)).toBe(true);
    expect(c.activationSparsity.slice(10).every((s) => s === 0)).toBe(true);
    expect(c.intermediateSizes.every((i) => i === 8192)).toBe(true);
    expect([c.altupNumInputs, c.laurelRank, c.hiddenSizePerLayerInput, c.altupCoefClip]).toEqual([4, 64, 256, 120]);
  });
});

describe('layer_types', () => {
  const base = readConfig(fixtureDir('gemma4-tiny-dense'));
  const small = (types: unknown) => text(base, { num_hidden_layers: 3, num_kv_shared_layers: 0, layer_types: types });

  it('a short list is padded with sliding_attention; [] means all sliding', () => {
    expect(parseGemma4Config(small([F])).layerTypes).toEqual([F, S, S]);
    expect(parseGemma4Config(small([])).layerTypes).toEqual([S, S, S]);
    expect(parseGemma3nConfig(text(readConfig(fixtureDir('gemma3n-tiny')), { layer_types: [S, F], activation_sparsity_pattern: null })).layerTypes).toEqual(
      [S, F, S, S, S, S],
    );
  });

  it('per-layer geometry follows the padded list', () => {
    const c = parseGemma4Config(small([S, F]));
    expect(c.headDims).toEqual([32, 64, 32]);
  });

  it('a longer list, an unknown kind, or a non-list fails naming the key', () => {
    expect(errorOf(() => parseGemma4Config(small([S, S, S, F]))).key).toBe('text_config.layer_types');
    const e = errorOf(() => parseGemma4Config(small([S, 'global'])));
    expect(e.key).toBe('text_config.layer_types[1]');
    expect(e.code).toBe('E_CONFIG_UNSUPPORTED');
    expect(e.message).toMatch(/"text_config\.layer_types\[1\]" is an unknown layer type "global"/);
    expect(errorOf(() => parseGemma4Config(small('sliding'))).key).toBe('text_config.layer_types');
  });

  it('absent: Gemma 4 needs sliding_window_pattern (mlx rule, with a warning); Gemma 3n uses HF every-5th-full', () => {
    expect(errorOf(() => parseGemma4Config(text(base, { layer_types: null }))).key).toBe('text_config.layer_types');
    const c = parseGemma4Config(text(base, { layer_types: null, sliding_window_pattern: 3 }));
    expect(c.layerTypes).toEqual([S, S, F, S, S, F]);
    expect(c.warnings.join()).toMatch(/sliding_window_pattern/);
    const n = parseGemma3nConfig(text(readConfig(fixtureDir('gemma3n-tiny')), { num_kv_shared_layers: 0 }, ['layer_types']));
    expect(n.layerTypes).toEqual([S, S, S, S, F, S]);
  });

  it('a stack without any full layer works (no index lookup of "full_attention")', () => {
    const c = parseGemma4Config(small([S, S, S]));
    expect(c.kvSources).toEqual([0, 1, 2]);
  });
});

describe('KV heads and k_eq_v (docs/architecture/gemma4.md §6.2)', () => {
  const base = readConfig(fixtureDir('gemma4-tiny-dense'));
  it('num_global_key_value_heads applies to full layers even without attention_k_eq_v', () => {
    const c = parseGemma4Config(text(base, { num_global_key_value_heads: 2, num_key_value_heads: 1 }));
    expect(c.numKvHeads).toEqual([1, 1, 2, 1, 1, 2]);
    expect(c.kEqV.some(Boolean)).toBe(false);
  });
  it('attention_k_eq_v only concerns full layers', () => {
    expect(parseGemma4Config(text(base, { attention_k_eq_v: true })).kEqV).toEqual([false, false, true, false, false, true]);
  });
  it('global_head_dim falls back to per_layer_config, then head_dim', () => {
    expect(parseGemma4Config(text(base, { global_head_dim: null, per_layer_config: { '2': { head_dim: 128 } } })).headDims[2]).toBe(128);
    expect(parseGemma4Config(text(base, { global_head_dim: 0 })).headDims[2]).toBe(32);
  });
  it('heads that do not divide fail naming the key', () => {
    expect(errorOf(() => parseGemma4Config(text(base, { num_global_key_value_heads: 3 }))).key).toBe('text_config.num_global_key_value_heads');
  });
});

describe('errors name the key', () => {
  const g4 = readConfig(fixtureDir('gemma4-tiny-moe'));
  const g3 = readConfig(fixtureDir('gemma3n-tiny'));
  it.each([
    ['gemma4 hidden_size missing', () => parseGemma4Config(text(g4, {}, ['hidden_size'])), 'text_config.hidden_size'],
    ['gemma4 top_k_experts > num_experts', () => parseGemma4Config(text(g4, { top_k_experts: 9 })), 'text_config.top_k_experts'],
    ['gemma4 moe size missing', () => parseGemma4Config(text(g4, { moe_intermediate_size: null })), 'text_config.expert_intermediate_size'],
    ['gemma4 activation', () => parseGemma4Config(text(g4, { hidden_activation: 'gelu' })), 'text_config.hidden_activation'],
    ['gemma3n sparsity length', () => parseGemma3nConfig(text(g3, { activation_sparsity_pattern: [0.95] })), 'text_config.activation_sparsity_pattern'],
    ['gemma3n intermediate list length', () => parseGemma3nConfig(text(g3, { intermediate_size: [128, 128] })), 'text_config.intermediate_size'],
    ['gemma3n all layers shared', () => parseGemma3nConfig(text(g3, { num_kv_shared_layers: 6 })), 'text_config.num_kv_shared_layers'],
    ['gemma3n shared layer without a source of its type', () =>
      parseGemma3nConfig(text(g3, { layer_types: [S, S, S, S, S, F], num_kv_shared_layers: 1 })), 'text_config.num_kv_shared_layers'],
    ['gemma3n vocab_size not an integer', () => parseGemma3nConfig(text(g3, { vocab_size: 'big' })), 'text_config.vocab_size'],
    ['text_config not an object', () => parseGemma3nConfig({ ...g3, text_config: [1] }), 'text_config'],
  ])('%s', (_, fn, key) => {
    const e = errorOf(fn);
    expect(e.key).toBe(key);
    expect(e.message).toContain(`config.json: "${key}" `);
  });

  it('text-only (gemma4_text) configs have the keys at the top level', () => {
    const flat = { ...(g4.text_config as object), model_type: 'gemma4_text' } as Record<string, unknown>;
    expect(parseGemma4Config(flat).moe).toEqual({ numExperts: 8, topK: 2, intermediate: 64 });
    delete flat.sliding_window;
    expect(errorOf(() => parseGemma4Config(flat)).key).toBe('sliding_window');
  });
});
