// Every real Hugging Face config (copied into fixtures/configs/) and every fixture config parses; the
// partial configs fail with clear errors about the keys they lack.
import { describe, expect, it } from 'vitest';
import { parseRope, parseRopeLayers, RopeConfigError, type RopeSpec } from '../src/index.js';
import { loadConfig } from './helpers.js';

function counts(specs: RopeSpec[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of specs) out[`${s.layerType ?? 'all'}:${s.type}`] = (out[`${s.layerType ?? 'all'}:${s.type}`] ?? 0) + 1;
  return out;
}

describe('real configs', () => {
  it('Phi-3-mini-4k-instruct: plain RoPE, θ 1e4, D 96', () => {
    const s = parseRope(loadConfig('Phi-3-mini-4k-instruct'));
    expect(s).toMatchObject({ type: 'default', theta: 10000, headDim: 96, rotaryDim: 96, maxPositionEmbeddings: 4096 });
    expect(parseRopeLayers(loadConfig('Phi-3-mini-4k-instruct'))).toHaveLength(32);
  });

  it('Phi-3.5-mini-instruct: LongRoPE, 48 pairs, L₀ 4096', () => {
    const s = parseRope(loadConfig('Phi-3.5-mini-instruct'));
    expect(s).toMatchObject({ type: 'longrope', headDim: 96, rotaryDim: 96 });
    expect(s.scaling).toMatchObject({ originalMaxPositionEmbeddings: 4096, policy: 'hf', shortMscaleSource: 'formula' });
    if (s.scaling.type !== 'longrope') throw new Error('not longrope');
    expect(s.scaling.shortFactor).toHaveLength(48);
    expect(s.scaling.longFactor).toHaveLength(48);
  });

  it.each(['Phi-4-mini-instruct', 'mlx-4bit--Phi-4-mini-instruct'])('%s: LongRoPE over 96 of 128 channels', (name) => {
    const s = parseRope(loadConfig(name));
    expect(s).toMatchObject({ type: 'longrope', headDim: 128, rotaryDim: 96, tableDim: 96, partialRotaryFactor: 0.75 });
    expect(s.regimeFor(4097).scale).toBeCloseTo(Math.sqrt(1 + Math.log(32) / Math.log(4096)), 14);
  });

  it('the two Phi-4-mini copies have identical RoPE', () => {
    expect(parseRope(loadConfig('Phi-4-mini-instruct')).hash).toBe(parseRope(loadConfig('mlx-4bit--Phi-4-mini-instruct')).hash);
  });

  it('Phi-3-small-8k-instruct: rope_embedding_base 1e6, D 128, position scale 1', () => {
    const s = parseRope(loadConfig('Phi-3-small-8k-instruct'));
    expect(s).toMatchObject({ type: 'default', theta: 1e6, headDim: 128, positionScale: 1 });
  });

  it.each([
    ['gemma-4-E2B-it', 35, { 'sliding_attention:default': 28, 'full_attention:proportional': 7 }],
    ['gemma-4-E4B-it', 42, { 'sliding_attention:default': 35, 'full_attention:proportional': 7 }],
    ['gemma-4-31B-it', 60, { 'sliding_attention:default': 50, 'full_attention:proportional': 10 }],
  ] as const)('%s: per-layer specs (sliding default 256 / θ 1e4, full proportional 512 / θ 1e6)', (name, n, expected) => {
    const specs = parseRopeLayers(loadConfig(name));
    expect(specs).toHaveLength(n);
    expect(counts(specs)).toEqual(expected);
    const full = specs.find((s) => s.layerType === 'full_attention')!;
    const sliding = specs.find((s) => s.layerType === 'sliding_attention')!;
    expect(full).toMatchObject({ headDim: 512, tableDim: 512, rotaryDim: 128, theta: 1e6 });
    expect(full.scaling).toEqual({ type: 'proportional', factor: 1, rotatedPairs: 64 });
    expect(sliding).toMatchObject({ headDim: 256, rotaryDim: 256, theta: 10000 });
    // layers of one type share one spec object
    expect(new Set(specs).size).toBe(2);
    expect(specs[n - 1]!.layerType).toBe('full_attention');
  });

  it('unsloth gemma-3n-E2B-it: 30 layers, sliding θ 1e4, full θ 1e6, D 256', () => {
    const specs = parseRopeLayers(loadConfig('unsloth--gemma-3n-E2B-it'));
    expect(specs).toHaveLength(30);
    expect(counts(specs)).toEqual({ 'sliding_attention:default': 24, 'full_attention:default': 6 });
    expect(specs[4]).toMatchObject({ layerType: 'full_attention', theta: 1e6, headDim: 256 });
    expect(specs[0]).toMatchObject({ layerType: 'sliding_attention', theta: 1e4, headDim: 256 });
  });
});

describe('partial configs (missing keys give clear errors)', () => {
  it('Phi-3.5-MoE-instruct.partial: no rope_theta → missing_key rope_theta', () => {
    const c = loadConfig('Phi-3.5-MoE-instruct.partial');
    const e = (() => {
      try {
        parseRope(c);
      } catch (err) {
        return err;
      }
      return null;
    })() as RopeConfigError;
    expect(e).toBeInstanceOf(RopeConfigError);
    expect([e.code, e.key]).toEqual(['missing_key', 'rope_theta']);
  });

  it('Phi-3.5-MoE-instruct.partial with the HF default θ: no rope_scaling for the 131072 context → plain RoPE (as HF)', () => {
    const c = loadConfig('Phi-3.5-MoE-instruct.partial');
    expect(parseRope(c, { defaultTheta: 1e6 }).scaling).toEqual({ type: 'default' });
  });

  it('Phi-3-small-128k-instruct.partial: no rope_scaling for the 131072 context → plain RoPE (as HF)', () => {
    const c = loadConfig('Phi-3-small-128k-instruct.partial');
    expect(parseRope(c).scaling).toEqual({ type: 'default' });
  });
});

describe('null or absent rope_scaling keeps plain RoPE (HF behaviour)', () => {
  const phi3 = (rs: unknown) => ({
    model_type: 'phi3', hidden_size: 64, num_attention_heads: 4, rope_theta: 10000,
    max_position_embeddings: 131072, original_max_position_embeddings: 4096, ...(rs === undefined ? {} : { rope_scaling: rs }),
  });
  it.each([['null', null], ['absent', undefined]])('rope_scaling %s with max_position_embeddings > original', (_n, rs) => {
    const spec = parseRope(phi3(rs));
    expect(spec.scaling).toEqual({ type: 'default' });
    expect(spec.theta).toBe(10000);
  });
});

describe('fixture configs', () => {
  it.each([
    ['phi3-tiny-short', 'longrope'],
    ['phi3-tiny-long', 'longrope'],
    ['phimoe-tiny', 'longrope'],
    ['phimoe-tiny-q4-mlx', 'longrope'],
    ['phi3small-tiny', 'default'],
  ] as const)('%s parses as %s', (name, type) => {
    const specs = parseRopeLayers(loadConfig(name));
    expect(specs.length).toBeGreaterThan(0);
    expect(new Set(specs.map((s) => s.type))).toEqual(new Set([type]));
  });

  it.each(['gemma4-tiny-dense', 'gemma4-tiny-moe', 'gemma3n-tiny'])('%s parses per layer type', (name) => {
    const specs = parseRopeLayers(loadConfig(name));
    expect(specs).toHaveLength(6);
    expect(specs.map((s) => s.layerType)).toEqual(['sliding_attention', 'sliding_attention', 'full_attention', 'sliding_attention', 'sliding_attention', 'full_attention']);
  });
});
