/** Unsupported or inconsistent configs fail at parse/load with an error naming the key (issue 6). */
import { describe, expect, it } from 'vitest';
import { ModelConfigError, isDenseLayer, parsePhi3Config, parsePhi3SmallConfig, parsePhiMoEConfig } from '../src/index.js';
import { fixture } from './helpers.js';

const phi3 = fixture('phi3-tiny-short').config;
const moe = fixture('phimoe-tiny').config;
const small = fixture('phi3small-tiny').config;

function errorOf(fn: () => unknown): ModelConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelConfigError);
    return e as ModelConfigError;
  }
  throw new Error('expected an error');
}

function without(c: Record<string, unknown>, key: string): Record<string, unknown> {
  const { [key]: _drop, ...rest } = c;
  return rest;
}

describe('phi3 config', () => {
  it.each([
    ['num_key_value_heads', { num_key_value_heads: 3 }, 'E_CONFIG_INVALID', /does not divide num_attention_heads/],
    ['num_attention_heads', { num_attention_heads: 5, num_key_value_heads: 5 }, 'E_CONFIG_INVALID', /does not divide hidden_size/],
    ['hidden_act', { hidden_act: 'gelu' }, 'E_CONFIG_UNSUPPORTED', /"gelu" is not supported/],
    ['attention_bias', { attention_bias: true }, 'E_CONFIG_UNSUPPORTED', /no biases/],
    ['rms_norm_eps', { rms_norm_eps: -1 }, 'E_CONFIG_INVALID', /must be > 0/],
    ['model_type', { model_type: 'phi3small' }, 'E_CONFIG_UNSUPPORTED', /handles "phi3"/],
    ['rope_scaling', { rope_scaling: { type: 'dynamic', factor: 2 } }, 'E_CONFIG_UNSUPPORTED', /not used by Phi-3/],
    ['rope_scaling.type', { rope_scaling: { type: 'mystery' } }, 'E_CONFIG_ROPE', /unknown_rope_type/],
  ])('%s', (key, patch, code, msg) => {
    const e = errorOf(() => parsePhi3Config({ ...phi3, ...patch }));
    expect([e.key, e.code]).toEqual([key, code]);
    expect(e.message).toMatch(msg);
    expect(e.message).toContain(`"${key}"`);
  });

  it('a LongRoPE factor list of the wrong length names the list', () => {
    const rs = phi3.rope_scaling as Record<string, unknown>;
    const e = errorOf(() => parsePhi3Config({ ...phi3, rope_scaling: { ...rs, short_factor: (rs.short_factor as number[]).slice(1) } }));
    expect([e.key, e.code]).toEqual(['rope_scaling.short_factor', 'E_CONFIG_ROPE']);
  });

  it('partial rotary: rotary_dim = floor(D · factor) sets the factor-list length (Phi-4-mini: 0.75 · 128 = 96)', () => {
    const rs = phi3.rope_scaling as { short_factor: number[]; long_factor: number[] };
    const e = errorOf(() => parsePhi3Config({ ...phi3, partial_rotary_factor: 0.5 }));
    expect([e.key, e.code]).toEqual(['rope_scaling.short_factor', 'E_CONFIG_ROPE']);
    const half = { ...rs, short_factor: rs.short_factor.slice(0, 8), long_factor: rs.long_factor.slice(0, 8) };
    const c = parsePhi3Config({ ...phi3, partial_rotary_factor: 0.5, rope_scaling: half });
    expect([c.head_dim, c.rope.rotaryDim, c.partial_rotary_factor]).toEqual([32, 16, 0.5]);
  });

  it('missing shape keys are reported as missing', () => {
    for (const key of ['hidden_size', 'vocab_size', 'intermediate_size', 'num_hidden_layers']) {
      const e = errorOf(() => parsePhi3Config(without(phi3, key)));
      expect([e.key, e.code]).toEqual([key, 'E_CONFIG_MISSING']);
    }
  });

  it('accepts "su" as LongRoPE, rope_scaling null as plain RoPE, and honours head_dim', () => {
    const rs = phi3.rope_scaling as Record<string, unknown>;
    expect(parsePhi3Config({ ...phi3, rope_scaling: { ...rs, type: 'su' } }).rope.type).toBe('longrope');
    expect(parsePhi3Config({ ...phi3, rope_scaling: null, max_position_embeddings: 32 }).rope.type).toBe('default');
    const c = parsePhi3Config({ ...phi3, rope_scaling: null, max_position_embeddings: 32, head_dim: 16 });
    expect(c.head_dim).toBe(16);
  });
});

describe('phimoe config', () => {
  it('num_experts_per_tok > num_local_experts names the key', () => {
    const e = errorOf(() => parsePhiMoEConfig({ ...moe, num_experts_per_tok: 9 }));
    expect([e.key, e.code]).toEqual(['num_experts_per_tok', 'E_CONFIG_INVALID']);
    expect(e.message).toMatch(/num_local_experts = 8/);
  });
  it('num_local_experts must be a positive integer', () => {
    expect(errorOf(() => parsePhiMoEConfig({ ...moe, num_local_experts: 0 })).key).toBe('num_local_experts');
    expect(errorOf(() => parsePhiMoEConfig({ ...moe, num_local_experts: 2.5 })).key).toBe('num_local_experts');
  });
  it('router_jitter_noise must be >= 0', () => {
    expect(errorOf(() => parsePhiMoEConfig({ ...moe, router_jitter_noise: -0.1 })).key).toBe('router_jitter_noise');
  });
  it('LayerNorm eps: rms_norm_eps, else layer_norm_eps, else layer_norm_epsilon, else 1e-5', () => {
    expect(parsePhiMoEConfig({ ...moe, rms_norm_eps: 3e-6 }).rms_norm_eps).toBe(3e-6);
    expect(parsePhiMoEConfig({ ...without(moe, 'rms_norm_eps'), layer_norm_eps: 2e-6 }).rms_norm_eps).toBe(2e-6);
    expect(parsePhiMoEConfig({ ...without(moe, 'rms_norm_eps'), layer_norm_epsilon: 4e-6 }).rms_norm_eps).toBe(4e-6);
    expect(parsePhiMoEConfig(without(moe, 'rms_norm_eps')).rms_norm_eps).toBe(1e-5);
  });
  it('missing rope_theta falls back to the HF default 1e6', () => {
    expect(parsePhiMoEConfig(without(moe, 'rope_theta')).rope.theta).toBe(1e6);
  });
});

describe('phi3small config', () => {
  it('only gegelu', () => {
    const e = errorOf(() => parsePhi3SmallConfig({ ...small, hidden_act: 'gelu' }));
    expect([e.key, e.code]).toEqual(['hidden_act', 'E_CONFIG_UNSUPPORTED']);
  });
  it('exactly one of ff_intermediate_size and ff_dim_multiplier', () => {
    expect(errorOf(() => parsePhi3SmallConfig({ ...small, ff_dim_multiplier: 2 })).key).toBe('ff_dim_multiplier');
    expect(errorOf(() => parsePhi3SmallConfig({ ...small, ff_intermediate_size: null })).code).toBe('E_CONFIG_MISSING');
  });
  it('ff_dim_multiplier: F = m·floor(H/3)·2, rounded up to 256 with gegelu_pad_to_256', () => {
    const c = parsePhi3SmallConfig({ ...small, ff_intermediate_size: null, ff_dim_multiplier: 1.5 });
    expect(c.ff_intermediate_size).toBe(256); // 1.5 · 42 · 2 = 126 → 256
    const d = parsePhi3SmallConfig({ ...small, ff_intermediate_size: null, ff_dim_multiplier: 1.5, gegelu_pad_to_256: false });
    expect(d.ff_intermediate_size).toBe(126);
  });
  it('dense layer rule: (ℓ+1) mod n = 0; n = 0 or null ⇒ all block-sparse', () => {
    expect(parsePhi3SmallConfig(small).dense_attention_every_n_layers).toBe(2);
    expect(parsePhi3SmallConfig({ ...small, dense_attention_every_n_layers: 0 }).dense_attention_every_n_layers).toBeNull();
    expect(parsePhi3SmallConfig({ ...small, dense_attention_every_n_layers: null }).dense_attention_every_n_layers).toBeNull();
  });
  it('the HF rule differs from mlx-lm for n ≠ 2: n = 3 ⇒ layers 2, 5 dense (mlx-lm rule ℓ mod n = 0: only 0 and 3 block-sparse)', () => {
    const c = parsePhi3SmallConfig({ ...small, num_hidden_layers: 6, dense_attention_every_n_layers: 3 });
    expect([0, 1, 2, 3, 4, 5].filter((l) => isDenseLayer(c, l))).toEqual([2, 5]);
    const all = parsePhi3SmallConfig({ ...small, dense_attention_every_n_layers: null });
    expect([0, 1, 2, 3].some((l) => isDenseLayer(all, l))).toBe(false);
  });
  it('tie_word_embeddings defaults to true; gegelu_limit null means no clamp', () => {
    expect(parsePhi3SmallConfig(without(small, 'tie_word_embeddings')).tie_word_embeddings).toBe(true);
    expect(parsePhi3SmallConfig({ ...small, gegelu_limit: null }).gegelu_limit).toBeNull();
  });
});
