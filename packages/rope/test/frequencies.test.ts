// Each variant's inverse frequencies, attention factors and cos/sin tables against closed forms written
// out here from the specs (not by calling the package's own frequency code).
import { describe, expect, it } from 'vitest';
import { parseRope, ropeFrequencies, RopeTable, type RopeSpec, type RopeRegime } from '../src/index.js';
import { expectClose, loadConfig } from './helpers.js';

/** θ^(−2i/d) written as exp(−(2i/d)·ln θ). */
function inv(theta: number, i: number, d: number): number {
  return Math.exp(-((2 * i) / d) * Math.log(theta));
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** Compare the cos/sin table rows at some positions with cos(p·ω)·a, sin(p·ω)·a. */
function checkTable(spec: RopeSpec, regime: RopeRegime | number | undefined, omega: number[], a: number, positions = [0, 1, 2, 7, 31, 32, 33, 100, 1000, 4097]): void {
  const t = new RopeTable(spec, regime, { initialRows: 4 });
  t.ensure(Math.max(...positions) + 1);
  const P = t.pairs;
  expect(P).toBe(omega.length);
  for (const p of positions) {
    const cos = Array.from(t.cos.subarray(p * P, (p + 1) * P));
    const sin = Array.from(t.sin.subarray(p * P, (p + 1) * P));
    expectClose(cos, omega.map((w) => Math.cos(p * w) * a), 0, 2e-7);
    expectClose(sin, omega.map((w) => Math.sin(p * w) * a), 0, 2e-7);
  }
}

describe('default RoPE', () => {
  const spec = parseRope({ rope_theta: 10000, head_dim: 64, hidden_size: 256, num_attention_heads: 4 });
  it('ω_i = θ^(−2i/d), scale 1', () => {
    expect(spec.type).toBe('default');
    expect(spec.rotaryDim).toBe(64);
    const f = ropeFrequencies(spec);
    expectClose(f.invFreq, range(32).map((i) => inv(10000, i, 64)), 1e-14);
    expect(f.attentionScale).toBe(1);
    expect(f.invFreq[0]).toBe(1);
    checkTable(spec, undefined, range(32).map((i) => inv(10000, i, 64)), 1);
  });
  it('head dim from hidden_size / num_attention_heads; partial rotary uses d = floor(D·φ)', () => {
    const s = parseRope({ rope_theta: 500, hidden_size: 96, num_attention_heads: 2, partial_rotary_factor: 0.5 });
    expect(s.headDim).toBe(48);
    expect(s.rotaryDim).toBe(24);
    expect(s.tableDim).toBe(24);
    expectClose(ropeFrequencies(s).invFreq, range(12).map((i) => inv(500, i, 24)), 1e-14);
  });
});

describe('linear RoPE', () => {
  const spec = parseRope({ rope_theta: 10000, head_dim: 32, rope_scaling: { type: 'linear', factor: 4 } });
  it('ω_i = θ^(−2i/d)/factor; the table at p equals plain RoPE at p/factor', () => {
    expectClose(ropeFrequencies(spec).invFreq, range(16).map((i) => inv(10000, i, 32) / 4), 1e-14);
    const t = new RopeTable(spec, undefined, { initialRows: 101 });
    for (const p of [0, 4, 17, 100]) {
      for (let i = 0; i < 16; i++) expect(t.cos[p * 16 + i]).toBeCloseTo(Math.cos((p / 4) * inv(10000, i, 32)), 6);
    }
  });
});

describe('dynamic NTK', () => {
  const cfg = { rope_theta: 10000, head_dim: 64, max_position_embeddings: 2048, rope_scaling: { type: 'dynamic', factor: 2 } };
  const spec = parseRope(cfg);
  it('unchanged base up to L₀, then θ·(f·L/L₀ − (f − 1))^(d/(d−2))', () => {
    expectClose(ropeFrequencies(spec, 2048).invFreq, range(32).map((i) => inv(10000, i, 64)), 1e-14);
    expectClose(ropeFrequencies(spec, 10).invFreq, range(32).map((i) => inv(10000, i, 64)), 1e-14);
    const base4096 = 10000 * Math.pow(3, 64 / 62); // 2·4096/2048 − 1 = 3
    expectClose(ropeFrequencies(spec, 4096).invFreq, range(32).map((i) => inv(base4096, i, 64)), 1e-13);
    checkTable(spec, 4096, range(32).map((i) => inv(base4096, i, 64)), 1);
  });
  it('one regime per length past L₀', () => {
    expect(spec.regimeFor(100).id).toBe(spec.regimeFor(2048).id);
    expect(spec.regimeFor(2049).id).not.toBe(spec.regimeFor(2048).id);
    expect(spec.regimeFor(4096).seqLen).toBe(4096);
  });
  it('rope_scaling.original_max_position_embeddings takes precedence over max_position_embeddings', () => {
    const s = parseRope({ ...cfg, max_position_embeddings: 8192, rope_scaling: { type: 'dynamic', factor: 2, original_max_position_embeddings: 2048 } });
    const base = 10000 * Math.pow(3, 64 / 62);
    expectClose(ropeFrequencies(s, 4096).invFreq, range(32).map((i) => inv(base, i, 64)), 1e-13);
  });
});

describe('YaRN', () => {
  const base = { rope_theta: 10000, head_dim: 128, max_position_embeddings: 131072 };
  // Correction range worked out by hand for θ = 1e4, d = 128, L₀ = 4096, β_fast = 32, β_slow = 1:
  // 128·ln(4096/(32·2π))/(2·ln 1e4) = 20.94 → floor 20; 128·ln(4096/(2π))/(2·ln 1e4) = 45.03 → ceil 46.
  const expected = (factor: number, low: number, high: number): number[] =>
    range(64).map((i) => {
      const w = inv(10000, i, 128);
      if (i <= low) return w;
      if (i >= high) return w / factor;
      const r = (i - low) / (high - low);
      return w * (1 - r) + (w / factor) * r;
    });
  it('ramp between the truncated correction dims 20 … 46, attention factor 0.1·ln s + 1', () => {
    const s = parseRope({ ...base, rope_scaling: { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 4096 } });
    expect(s.type).toBe('yarn');
    const f = ropeFrequencies(s);
    expectClose(f.invFreq, expected(4, 20, 46), 1e-13);
    expect(f.attentionScale).toBeCloseTo(0.1 * Math.log(4) + 1, 14);
    expect(f.attentionScale).toBeCloseTo(1.1386294361, 9);
    checkTable(s, undefined, expected(4, 20, 46), 0.1 * Math.log(4) + 1);
  });
  it('truncate: false keeps the fractional range', () => {
    const s = parseRope({ ...base, rope_scaling: { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 4096, truncate: false } });
    const low = (128 * Math.log(4096 / (32 * 2 * Math.PI))) / (2 * Math.log(10000));
    const high = (128 * Math.log(4096 / (2 * Math.PI))) / (2 * Math.log(10000));
    expect(low).toBeCloseTo(20.9445, 4);
    expect(high).toBeCloseTo(45.027, 3);
    expectClose(ropeFrequencies(s).invFreq, expected(4, low, high), 1e-13);
  });
  it('mscale / mscale_all_dim and an explicit attention_factor', () => {
    const m = parseRope({ ...base, rope_scaling: { type: 'yarn', factor: 40, original_max_position_embeddings: 4096, mscale: 1, mscale_all_dim: 0.707 } });
    expect(m.regimeFor(0).scale).toBeCloseTo((0.1 * Math.log(40) + 1) / (0.1 * 0.707 * Math.log(40) + 1), 14);
    const e = parseRope({ ...base, rope_scaling: { type: 'yarn', factor: 4, attention_factor: 1.5, beta_fast: 16, beta_slow: 2, original_max_position_embeddings: 4096 } });
    expect(e.regimeFor(0).scale).toBe(1.5);
    // β_fast 16: 128·ln(4096/(16·2π))/(2 ln 1e4) = 25.76 → 25; β_slow 2: 40.21 → 41.
    expectClose(ropeFrequencies(e).invFreq, expected(4, 25, 41), 1e-13);
  });
});

describe('Llama 3', () => {
  const spec = parseRope({
    rope_theta: 500000,
    head_dim: 128,
    max_position_embeddings: 131072,
    rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
  });
  it('high frequencies kept, low divided by 8, smooth blend in between', () => {
    const exp = range(64).map((i) => {
      const w = inv(500000, i, 128);
      const wavelen = (2 * Math.PI) / w;
      if (wavelen < 8192 / 4) return w;
      if (wavelen > 8192 / 1) return w / 8;
      const sm = (8192 / wavelen - 1) / (4 - 1);
      return (1 - sm) * (w / 8) + sm * w;
    });
    const f = ropeFrequencies(spec);
    expectClose(f.invFreq, exp, 1e-13);
    expect(f.attentionScale).toBe(1);
    expect(f.invFreq[0]).toBe(1);
    expect(f.invFreq[63]).toBeCloseTo(inv(500000, 63, 128) / 8, 20);
    // some pair is strictly in the blended band
    expect(exp.some((w, i) => w !== inv(500000, i, 128) && w !== inv(500000, i, 128) / 8)).toBe(true);
    checkTable(spec, undefined, exp, 1);
  });
});

describe('LongRoPE (phi3-tiny-short)', () => {
  const cfg = loadConfig('phi3-tiny-short');
  const rs = cfg.rope_scaling as { short_factor: number[]; long_factor: number[] };
  const spec = parseRope(cfg);
  const a = Math.sqrt(1 + Math.log(4) / Math.log(32)); // L = 128, L₀ = 32
  it('attention factor √(1 + ln 4 / ln 32) ≈ 1.1832 in both regimes', () => {
    expect(a).toBeCloseTo(1.1832, 4);
    expect(a).toBeCloseTo(Math.sqrt(1.4), 14);
    expect(spec.regimeFor(32).scale).toBeCloseTo(a, 15);
    expect(spec.regimeFor(33).scale).toBeCloseTo(a, 15);
  });
  it('short table: ω_i = 1/(short_i · θ^(2i/d)) with d = 32', () => {
    expect(spec.headDim).toBe(32);
    expect(spec.rotaryDim).toBe(32);
    const exp = range(16).map((i) => inv(10000, i, 32) / rs.short_factor[i]!);
    const r = spec.regimeFor(10);
    expect(r.table).toBe('short');
    expectClose(ropeFrequencies(spec, r).invFreq, exp, 1e-14);
    checkTable(spec, r, exp, a);
  });
  it('long table: ω_i = 1/(long_i · θ^(2i/d))', () => {
    const exp = range(16).map((i) => inv(10000, i, 32) / rs.long_factor[i]!);
    const r = spec.regimeFor(64);
    expect(r.table).toBe('long');
    expectClose(ropeFrequencies(spec, r).invFreq, exp, 1e-14);
    checkTable(spec, r, exp, a);
  });
  it('phi3-tiny-long has the same RoPE as phi3-tiny-short', () => {
    expect(parseRope(loadConfig('phi3-tiny-long')).hash).toBe(spec.hash);
  });
});

describe('LongRoPE with explicit mscales (phimoe-tiny)', () => {
  const cfg = loadConfig('phimoe-tiny');
  const rs = cfg.rope_scaling as { short_factor: number[]; long_factor: number[]; short_mscale: number; long_mscale: number };
  const spec = parseRope(cfg);
  it('uses short_mscale / long_mscale = 1.243163121016122, not the formula', () => {
    expect(rs.short_mscale).toBe(1.243163121016122);
    expect(spec.regimeFor(32)).toMatchObject({ table: 'short', scale: 1.243163121016122 });
    expect(spec.regimeFor(33)).toMatchObject({ table: 'long', scale: 1.243163121016122 });
    expect(Math.abs(spec.regimeFor(33).scale - Math.sqrt(1.4))).toBeGreaterThan(0.05);
    checkTable(spec, 33, range(16).map((i) => inv(10000, i, 32) / rs.long_factor[i]!), 1.243163121016122);
    checkTable(spec, 5, range(16).map((i) => inv(10000, i, 32) / rs.short_factor[i]!), 1.243163121016122);
  });
  it('the q4 fixture has the same RoPE', () => {
    expect(parseRope(loadConfig('phimoe-tiny-q4-mlx')).hash).toBe(spec.hash);
  });
});

describe('Gemma 4 proportional RoPE (full-attention layers)', () => {
  const cfg = loadConfig('gemma4-tiny-dense');
  it('tiny: head 64, φ 0.25 → 8 rotating pairs with exponent over 64, 24 pairs at frequency 0', () => {
    const spec = parseRope(cfg, { layerType: 'full_attention' });
    expect(spec).toMatchObject({ type: 'proportional', headDim: 64, rotaryDim: 16, tableDim: 64, theta: 1e6 });
    const exp = range(32).map((i) => (i < 8 ? inv(1e6, i, 64) : 0));
    const f = ropeFrequencies(spec);
    expectClose(f.invFreq, exp, 1e-14);
    expect(f.attentionScale).toBe(1);
    checkTable(spec, undefined, exp, 1);
    const t = new RopeTable(spec, undefined, { initialRows: 300 });
    for (let p = 0; p < 300; p++) {
      for (let i = 8; i < 32; i++) {
        expect(t.cos[p * 32 + i]).toBe(1);
        expect(t.sin[p * 32 + i]).toBe(0);
      }
    }
  });
  it('E2B: global head 512 → 64 rotating pairs, θ^(−2i/512)', () => {
    const spec = parseRope(loadConfig('gemma-4-E2B-it'), { layerType: 'full_attention' });
    expect(spec).toMatchObject({ headDim: 512, rotaryDim: 128, tableDim: 512 });
    expectClose(ropeFrequencies(spec).invFreq, range(256).map((i) => (i < 64 ? inv(1e6, i, 512) : 0)), 1e-14);
  });
  it('factor divides the rotated frequencies', () => {
    const c = structuredClone(cfg) as { text_config: { rope_parameters: { full_attention: Record<string, unknown> } } };
    c.text_config.rope_parameters.full_attention.factor = 8;
    const spec = parseRope(c, { layerType: 'full_attention' });
    expectClose(ropeFrequencies(spec).invFreq, range(32).map((i) => (i < 8 ? inv(1e6, i, 64) / 8 : 0)), 1e-14);
  });
  it('sliding layers: plain RoPE over head_dim with θ = 10000', () => {
    const spec = parseRope(cfg, { layerType: 'sliding_attention' });
    expect(spec).toMatchObject({ type: 'default', headDim: 32, rotaryDim: 32, theta: 10000 });
    checkTable(spec, undefined, range(16).map((i) => inv(10000, i, 32)), 1);
  });
});

describe('Gemma 3n local / global bases', () => {
  const cfg = loadConfig('gemma3n-tiny');
  it('sliding layers use rope_local_base_freq, full layers rope_theta', () => {
    const local = parseRope(cfg, { layerType: 'sliding_attention' });
    const global = parseRope(cfg, { layerType: 'full_attention' });
    expect(local).toMatchObject({ type: 'default', theta: 10000, headDim: 32, layerType: 'sliding_attention' });
    expect(global).toMatchObject({ type: 'default', theta: 1e6, headDim: 32, layerType: 'full_attention' });
    checkTable(local, undefined, range(16).map((i) => inv(1e4, i, 32)), 1);
    checkTable(global, undefined, range(16).map((i) => inv(1e6, i, 32)), 1);
  });
  it('layerIndex picks the type from layer_types', () => {
    expect(parseRope(cfg, { layerIndex: 2 }).theta).toBe(1e6);
    expect(parseRope(cfg, { layerIndex: 3 }).theta).toBe(1e4);
  });
  it('the v5 nested rope_parameters form gives the same specs', () => {
    const c = structuredClone(cfg) as Record<string, unknown> & { text_config: Record<string, unknown> };
    const t = c.text_config;
    delete t.rope_local_base_freq;
    delete t.rope_theta;
    t.rope_parameters = { full_attention: { rope_type: 'default', rope_theta: 1e6 }, sliding_attention: { rope_type: 'default', rope_theta: 1e4 } };
    expect(parseRope(c, { layerType: 'sliding_attention' }).hash).toBe(parseRope(cfg, { layerType: 'sliding_attention' }).hash);
    expect(parseRope(c, { layerType: 'full_attention' }).hash).toBe(parseRope(cfg, { layerType: 'full_attention' }).hash);
  });
});

describe('Phi-3-small', () => {
  it('phi3small-tiny: base rope_embedding_base = 1e6, head 32, positions × rope_position_scale', () => {
    const spec = parseRope(loadConfig('phi3small-tiny'));
    expect(spec).toMatchObject({ type: 'default', theta: 1e6, headDim: 32, positionScale: 1 });
    checkTable(spec, undefined, range(16).map((i) => inv(1e6, i, 32)), 1);
  });
  it('rope_position_scale 0.5: the table at p equals plain RoPE at p/2', () => {
    const c = { ...loadConfig('phi3small-tiny'), rope_position_scale: 0.5 };
    const spec = parseRope(c);
    expect(spec.positionScale).toBe(0.5);
    checkTable(spec, undefined, range(16).map((i) => 0.5 * inv(1e6, i, 32)), 1);
  });
  it('LongRoPE: short regime defaults to a = 1, long to √(1 + ln(L/L₀)/ln L₀); explicit mscales win', () => {
    const short = range(16).map((i) => 1 + i / 100);
    const long = range(16).map((i) => 2 + i);
    const c = {
      ...loadConfig('phi3small-tiny'),
      max_position_embeddings: 1024,
      rope_scaling: { type: 'longrope', short_factor: short, long_factor: long, original_max_position_embeddings: 64 },
    };
    const spec = parseRope(c);
    const a = Math.sqrt(1 + Math.log(16) / Math.log(64));
    expect(spec.regimeFor(64)).toMatchObject({ table: 'short', scale: 1 });
    expect(spec.regimeFor(65).table).toBe('long');
    expect(spec.regimeFor(65).scale).toBeCloseTo(a, 15);
    checkTable(spec, 64, range(16).map((i) => inv(1e6, i, 32) / short[i]!), 1);
    checkTable(spec, 65, range(16).map((i) => inv(1e6, i, 32) / long[i]!), a);
    const m = parseRope({ ...c, rope_scaling: { ...c.rope_scaling, short_mscale: 1.1, long_mscale: 1.3 } });
    expect(m.regimeFor(1).scale).toBe(1.1);
    expect(m.regimeFor(100).scale).toBe(1.3);
    // the remote code treats 0 as "unset"
    const z = parseRope({ ...c, rope_scaling: { ...c.rope_scaling, short_mscale: 0, long_mscale: 0 } });
    expect(z.regimeFor(1).scale).toBe(1);
    expect(z.regimeFor(100).scale).toBeCloseTo(a, 15);
  });
});

describe('real LongRoPE configs', () => {
  it('Phi-3.5-mini: a = √(17/12) = 1.19024 in both regimes, 48 pairs', () => {
    const spec = parseRope(loadConfig('Phi-3.5-mini-instruct'));
    expect(spec.rotaryDim).toBe(96);
    expect(spec.regimeFor(4096)).toMatchObject({ table: 'short' });
    expect(spec.regimeFor(4097)).toMatchObject({ table: 'long' });
    expect(spec.regimeFor(1).scale).toBeCloseTo(Math.sqrt(17 / 12), 15);
    expect(spec.regimeFor(5000).scale).toBeCloseTo(1.1902380714, 9);
  });
  it('Phi-4-mini: partial rotary 0.75 → 96 of 128 channels rotate, 48 factors', () => {
    const cfg = loadConfig('Phi-4-mini-instruct');
    const spec = parseRope(cfg);
    expect(spec).toMatchObject({ headDim: 128, rotaryDim: 96, tableDim: 96, partialRotaryFactor: 0.75 });
    const long = (cfg.rope_scaling as { long_factor: number[] }).long_factor;
    expectClose(ropeFrequencies(spec, 10000).invFreq, range(48).map((i) => inv(10000, i, 96) / long[i]!), 1e-14);
  });
});
