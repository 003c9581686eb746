// Every malformed RoPE configuration throws a RopeConfigError whose code and key name the fault.
import { describe, expect, it } from 'vitest';
import { parseRope, parseRopeLayers, RopeConfigError, type ParseRopeOptions, type RopeErrorCode } from '../src/index.js';
import { loadConfig } from './helpers.js';

type Cfg = Record<string, unknown>;

const phi = (): Cfg => structuredClone(loadConfig('phi3-tiny-short'));
const scaling = (c: Cfg): Cfg => c.rope_scaling as Cfg;
/** phi3-tiny-short with rope_scaling edited. */
const phiWith = (edit: (rs: Cfg, c: Cfg) => void): Cfg => {
  const c = phi();
  edit(scaling(c), c);
  return c;
};
const gemma4 = (): Cfg => structuredClone(loadConfig('gemma4-tiny-dense'));
const g4text = (c: Cfg): Cfg => c.text_config as Cfg;
const plain = (extra: Cfg = {}): Cfg => ({ rope_theta: 10000, head_dim: 32, max_position_embeddings: 4096, ...extra });

interface Case {
  name: string;
  config: unknown;
  options?: ParseRopeOptions;
  code: RopeErrorCode;
  key: string;
  message?: RegExp;
}

const CASES: Case[] = [
  // ---- shape of the config
  { name: 'config is null', config: null, code: 'invalid_config', key: '(config)' },
  { name: 'config is an array', config: [1, 2], code: 'invalid_config', key: '(config)' },
  { name: 'text_config is a string', config: { text_config: 'x' }, code: 'invalid_config', key: 'text_config' },
  { name: 'rope_scaling is a string', config: plain({ rope_scaling: 'longrope' }), code: 'invalid_value', key: 'rope_scaling' },
  { name: 'rope_scaling is an array', config: plain({ rope_scaling: [1, 2] }), code: 'invalid_value', key: 'rope_scaling' },
  { name: 'rope_parameters is a number', config: plain({ rope_parameters: 3 }), code: 'invalid_value', key: 'rope_parameters' },

  // ---- type
  { name: 'unknown type', config: phiWith((rs) => (rs.type = 'ntk-by-parts')), code: 'unknown_rope_type', key: 'rope_scaling.type', message: /"ntk-by-parts"/ },
  { name: 'unknown rope_type', config: plain({ rope_scaling: { rope_type: 'mrope', factor: 2 } }), code: 'unknown_rope_type', key: 'rope_scaling.rope_type' },
  { name: 'type is not a string', config: phiWith((rs) => (rs.type = 3)), code: 'invalid_value', key: 'rope_scaling.type' },
  {
    name: 'type and rope_type disagree',
    config: phiWith((rs) => (rs.rope_type = 'linear')),
    code: 'conflict',
    key: 'rope_scaling.rope_type',
  },
  {
    name: 'unknown rope_type inside per-layer rope_parameters',
    config: (() => {
      const c = gemma4();
      ((g4text(c).rope_parameters as Cfg).full_attention as Cfg).rope_type = 'proportionate';
      return c;
    })(),
    options: { layerType: 'full_attention' },
    code: 'unknown_rope_type',
    key: 'text_config.rope_parameters.full_attention.rope_type',
  },

  // ---- LongRoPE factor lists
  { name: 'missing short_factor', config: phiWith((rs) => delete rs.short_factor), code: 'missing_key', key: 'rope_scaling.short_factor' },
  { name: 'missing long_factor', config: phiWith((rs) => delete rs.long_factor), code: 'missing_key', key: 'rope_scaling.long_factor' },
  { name: 'short_factor is null', config: phiWith((rs) => (rs.short_factor = null)), code: 'missing_key', key: 'rope_scaling.short_factor' },
  { name: 'short_factor is a number', config: phiWith((rs) => (rs.short_factor = 1.0)), code: 'invalid_factor_list', key: 'rope_scaling.short_factor' },
  { name: 'long_factor is an object', config: phiWith((rs) => (rs.long_factor = { 0: 1 })), code: 'invalid_factor_list', key: 'rope_scaling.long_factor' },
  {
    name: 'short_factor too short',
    config: phiWith((rs) => (rs.short_factor = (rs.short_factor as number[]).slice(0, 15))),
    code: 'wrong_length',
    key: 'rope_scaling.short_factor',
    message: /15 entries, expected rotary_dim \/ 2 = 16/,
  },
  {
    name: 'long_factor too long (head_dim-length list)',
    config: phiWith((rs) => (rs.long_factor = [...(rs.long_factor as number[]), ...(rs.long_factor as number[])])),
    code: 'wrong_length',
    key: 'rope_scaling.long_factor',
  },
  { name: 'long_factor empty', config: phiWith((rs) => (rs.long_factor = [])), code: 'wrong_length', key: 'rope_scaling.long_factor' },
  {
    name: 'factor lists sized for the full head dim under partial rotary',
    config: phiWith((_rs, c) => (c.partial_rotary_factor = 0.5)),
    code: 'wrong_length',
    key: 'rope_scaling.short_factor',
    message: /expected rotary_dim \/ 2 = 8/,
  },
  { name: 'short_factor has NaN', config: phiWith((rs) => ((rs.short_factor as number[])[3] = NaN)), code: 'invalid_factor_list', key: 'rope_scaling.short_factor', message: /entry 3/ },
  { name: 'long_factor has Infinity', config: phiWith((rs) => ((rs.long_factor as number[])[0] = Infinity)), code: 'invalid_factor_list', key: 'rope_scaling.long_factor', message: /entry 0/ },
  { name: 'short_factor has a string', config: phiWith((rs) => ((rs.short_factor as unknown[])[1] = '1.0')), code: 'invalid_factor_list', key: 'rope_scaling.short_factor' },
  { name: 'short_factor has null', config: phiWith((rs) => ((rs.short_factor as unknown[])[2] = null)), code: 'invalid_factor_list', key: 'rope_scaling.short_factor' },
  { name: 'long_factor has 0', config: phiWith((rs) => ((rs.long_factor as number[])[5] = 0)), code: 'invalid_factor_list', key: 'rope_scaling.long_factor' },
  { name: 'long_factor has a negative', config: phiWith((rs) => ((rs.long_factor as number[])[5] = -2)), code: 'invalid_factor_list', key: 'rope_scaling.long_factor' },
  { name: 'long_factor is nested', config: phiWith((rs) => (rs.long_factor = [rs.long_factor])), code: 'invalid_factor_list', key: 'rope_scaling.long_factor' },

  // ---- LongRoPE scalars
  {
    name: 'LongRoPE without original_max_position_embeddings',
    config: phiWith((_rs, c) => delete c.original_max_position_embeddings),
    code: 'missing_key',
    key: 'original_max_position_embeddings',
  },
  {
    name: 'top-level and nested original_max_position_embeddings disagree',
    config: phiWith((rs) => (rs.original_max_position_embeddings = 64)),
    code: 'conflict',
    key: 'rope_scaling.original_max_position_embeddings',
    message: /64 but original_max_position_embeddings is 32/,
  },
  { name: 'original_max_position_embeddings is fractional', config: phiWith((_rs, c) => (c.original_max_position_embeddings = 32.5)), code: 'invalid_value', key: 'original_max_position_embeddings' },
  { name: 'original_max_position_embeddings is negative', config: phiWith((_rs, c) => (c.original_max_position_embeddings = -32)), code: 'invalid_value', key: 'original_max_position_embeddings' },
  {
    name: 'LongRoPE without max_position_embeddings (attention factor needs L / L₀)',
    config: phiWith((_rs, c) => delete c.max_position_embeddings),
    code: 'missing_key',
    key: 'max_position_embeddings',
  },
  { name: 'short_mscale is a string', config: phiWith((rs) => (rs.short_mscale = '1.2')), code: 'invalid_value', key: 'rope_scaling.short_mscale' },
  { name: 'long_mscale is negative', config: phiWith((rs) => (rs.long_mscale = -1.2)), code: 'invalid_value', key: 'rope_scaling.long_mscale' },
  { name: 'long_mscale is zero (non Phi-3-small)', config: phiWith((rs) => (rs.long_mscale = 0)), code: 'invalid_value', key: 'rope_scaling.long_mscale' },
  { name: 'attention_factor is zero', config: phiWith((rs) => (rs.attention_factor = 0)), code: 'invalid_value', key: 'rope_scaling.attention_factor' },
  { name: 'LongRoPE factor is negative', config: phiWith((rs) => (rs.factor = -4)), code: 'invalid_value', key: 'rope_scaling.factor' },

  // ---- theta
  { name: 'negative rope_theta', config: plain({ rope_theta: -10000 }), code: 'invalid_value', key: 'rope_theta', message: /> 0/ },
  { name: 'zero rope_theta', config: plain({ rope_theta: 0 }), code: 'invalid_value', key: 'rope_theta' },
  { name: 'rope_theta is a string', config: plain({ rope_theta: '10000' }), code: 'invalid_value', key: 'rope_theta' },
  { name: 'rope_theta is Infinity', config: plain({ rope_theta: Infinity }), code: 'invalid_value', key: 'rope_theta' },
  { name: 'rope_theta missing', config: { head_dim: 32 }, code: 'missing_key', key: 'rope_theta', message: /defaultTheta/ },
  { name: 'negative theta inside rope_parameters', config: plain({ rope_parameters: { rope_type: 'default', rope_theta: -1 } }), code: 'invalid_value', key: 'rope_parameters.rope_theta' },
  { name: 'negative rope_embedding_base (Phi-3-small)', config: { head_dim: 32, rope_embedding_base: -1e6 }, code: 'invalid_value', key: 'rope_embedding_base' },
  {
    name: 'negative rope_local_base_freq (Gemma 3n)',
    config: (() => {
      const c = structuredClone(loadConfig('gemma3n-tiny'));
      (c.text_config as Cfg).rope_local_base_freq = -10000;
      return c;
    })(),
    options: { layerType: 'sliding_attention' },
    code: 'invalid_value',
    key: 'text_config.rope_local_base_freq',
  },
  { name: 'rope_position_scale is zero', config: { head_dim: 32, rope_embedding_base: 1e6, rope_position_scale: 0 }, code: 'invalid_value', key: 'rope_position_scale' },

  // ---- dims
  { name: 'partial_rotary_factor is 0', config: plain({ partial_rotary_factor: 0 }), code: 'invalid_value', key: 'partial_rotary_factor' },
  { name: 'partial_rotary_factor > 1', config: plain({ partial_rotary_factor: 1.5 }), code: 'invalid_value', key: 'partial_rotary_factor' },
  { name: 'odd rotary dim', config: plain({ head_dim: 30, partial_rotary_factor: 0.5 }), code: 'odd_rotary_dim', key: 'partial_rotary_factor', message: /= 15/ },
  { name: 'odd head dim', config: plain({ head_dim: 31 }), code: 'odd_rotary_dim', key: 'head_dim' },
  { name: 'head_dim is not an integer', config: plain({ head_dim: 32.5 }), code: 'invalid_value', key: 'head_dim' },
  { name: 'no head_dim and no hidden_size', config: { rope_theta: 10000 }, code: 'missing_key', key: 'head_dim' },
  { name: 'hidden_size not divisible by heads', config: { rope_theta: 10000, hidden_size: 100, num_attention_heads: 3 }, code: 'invalid_value', key: 'hidden_size' },
  // (A context past L₀ with rope_scaling null is not an error: plain RoPE, as HF; see configs.test.ts.)

  // ---- other variants
  { name: 'linear without factor', config: plain({ rope_scaling: { type: 'linear' } }), code: 'missing_key', key: 'rope_scaling.factor' },
  { name: 'linear factor 0', config: plain({ rope_scaling: { type: 'linear', factor: 0 } }), code: 'invalid_value', key: 'rope_scaling.factor' },
  { name: 'linear factor is a string', config: plain({ rope_scaling: { type: 'linear', factor: '4' } }), code: 'invalid_value', key: 'rope_scaling.factor' },
  { name: 'dynamic without factor', config: plain({ rope_scaling: { type: 'dynamic' } }), code: 'missing_key', key: 'rope_scaling.factor' },
  { name: 'dynamic without any context length', config: { rope_theta: 1e4, head_dim: 32, rope_scaling: { type: 'dynamic', factor: 2 } }, code: 'missing_key', key: 'max_position_embeddings' },
  { name: 'yarn without factor', config: plain({ rope_scaling: { rope_type: 'yarn', beta_fast: 32 } }), code: 'missing_key', key: 'rope_scaling.factor' },
  { name: 'yarn with negative beta_fast', config: plain({ rope_scaling: { rope_type: 'yarn', factor: 4, beta_fast: -1 } }), code: 'invalid_value', key: 'rope_scaling.beta_fast' },
  { name: 'yarn truncate is a string', config: plain({ rope_scaling: { rope_type: 'yarn', factor: 4, truncate: 'yes' } }), code: 'invalid_value', key: 'rope_scaling.truncate' },
  { name: 'yarn mscale is a string', config: plain({ rope_scaling: { rope_type: 'yarn', factor: 4, mscale: 'x' } }), code: 'invalid_value', key: 'rope_scaling.mscale' },
  {
    name: 'llama3 without low_freq_factor',
    config: plain({ rope_scaling: { rope_type: 'llama3', factor: 8, high_freq_factor: 4, original_max_position_embeddings: 8192 } }),
    code: 'missing_key',
    key: 'rope_scaling.low_freq_factor',
  },
  {
    name: 'llama3 with high_freq_factor ≤ low_freq_factor',
    config: plain({ rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 4, high_freq_factor: 4, original_max_position_embeddings: 8192 } }),
    code: 'invalid_value',
    key: 'rope_scaling.high_freq_factor',
  },
  {
    name: 'llama3 without original_max_position_embeddings',
    config: plain({ rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4 } }),
    code: 'missing_key',
    key: 'rope_scaling.original_max_position_embeddings',
  },
  {
    name: 'proportional with a negative factor',
    config: (() => {
      const c = gemma4();
      ((g4text(c).rope_parameters as Cfg).full_attention as Cfg).factor = -1;
      return c;
    })(),
    options: { layerType: 'full_attention' },
    code: 'invalid_value',
    key: 'text_config.rope_parameters.full_attention.factor',
  },
  {
    name: 'proportional rotating no pair',
    config: (() => {
      const c = gemma4();
      ((g4text(c).rope_parameters as Cfg).full_attention as Cfg).partial_rotary_factor = 0.01;
      return c;
    })(),
    options: { layerType: 'full_attention' },
    code: 'odd_rotary_dim',
    key: 'text_config.rope_parameters.full_attention.partial_rotary_factor',
  },

  // ---- per-layer-type RoPE
  { name: 'nested rope_parameters without a layer type', config: gemma4(), code: 'layer_type', key: 'text_config.rope_parameters', message: /full_attention, sliding_attention/ },
  {
    name: 'layer type missing from rope_parameters',
    config: (() => {
      const c = gemma4();
      delete (g4text(c).rope_parameters as Cfg).sliding_attention;
      return c;
    })(),
    options: { layerType: 'sliding_attention' },
    code: 'layer_type',
    key: 'text_config.rope_parameters.sliding_attention',
  },
  { name: 'layer type not in layer_types', config: gemma4(), options: { layerType: 'chunked_attention' }, code: 'layer_type', key: 'text_config.layer_types' },
  { name: 'layerIndex past layer_types', config: gemma4(), options: { layerIndex: 6 }, code: 'layer_type', key: 'text_config.layer_types' },
  { name: 'layerIndex and layerType disagree', config: gemma4(), options: { layerIndex: 2, layerType: 'sliding_attention' }, code: 'layer_type', key: 'text_config.layer_types[2]' },
  { name: 'Gemma 3n local/global without a layer type', config: loadConfig('gemma3n-tiny'), code: 'layer_type', key: 'text_config.rope_local_base_freq' },
  {
    name: 'Gemma 4 full layer declared "default" with global_head_dim ≠ head_dim',
    config: (() => {
      const c = gemma4();
      ((g4text(c).rope_parameters as Cfg).full_attention as Cfg).rope_type = 'default';
      return c;
    })(),
    options: { layerType: 'full_attention' },
    code: 'ambiguous_head_dim',
    key: 'text_config.rope_parameters.full_attention.rope_type',
  },
  { name: 'global_head_dim is a string', config: (() => { const c = gemma4(); g4text(c).global_head_dim = '512'; return c; })(), options: { layerType: 'full_attention' }, code: 'invalid_value', key: 'text_config.global_head_dim' },
];

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('malformed RoPE configs', () => {
  it.each(CASES)('$name → $code at $key', ({ config, options, code, key, message }) => {
    const err = thrown(() => parseRope(config, options));
    expect(err).toBeInstanceOf(RopeConfigError);
    const e = err as RopeConfigError;
    expect(e.code).toBe(code);
    expect(e.key).toBe(key);
    expect(e.message.startsWith(`${key}: `)).toBe(true);
    expect(e.name).toBe('RopeConfigError');
    if (message) expect(e.message).toMatch(message);
  });

  it('every case is a valid config once the fault is removed (sanity: the bases parse)', () => {
    expect(() => parseRope(phi())).not.toThrow();
    expect(() => parseRope(gemma4(), { layerType: 'full_attention' })).not.toThrow();
    expect(() => parseRope(plain())).not.toThrow();
    expect(() => parseRope({ head_dim: 32 }, { defaultTheta: 1e6 })).not.toThrow();
  });

  it('parseRopeLayers: missing num_hidden_layers, and layer_types / num_hidden_layers disagreeing', () => {
    const e1 = thrown(() => parseRopeLayers(plain())) as RopeConfigError;
    expect(e1).toBeInstanceOf(RopeConfigError);
    expect([e1.code, e1.key]).toEqual(['missing_key', 'num_hidden_layers']);
    const c = gemma4();
    g4text(c).num_hidden_layers = 7;
    const e2 = thrown(() => parseRopeLayers(c)) as RopeConfigError;
    expect([e2.code, e2.key]).toEqual(['conflict', 'text_config.layer_types']);
  });

  it('invalid options are programming errors (RangeError), not config errors', () => {
    expect(() => parseRope(plain(), { layerIndex: -1 })).toThrow(RangeError);
    expect(() => parseRope(plain(), { layout: 'neox' as never })).toThrow(RangeError);
    expect(() => parseRope(phi(), { longropePolicy: 'mlx' as never })).toThrow(RangeError);
    expect(() => parseRope(plain(), { headDim: 0 })).toThrow(RopeConfigError);
  });
});
