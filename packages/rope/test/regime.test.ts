// Regimes: LongRoPE short/long rule, transitions (re-prefill), chunked prefill, identifiers.
import { describe, expect, it } from 'vitest';
import { hasMultipleRegimes, parseRope, regimeFor, regimeTransition } from '../src/index.js';
import { loadConfig } from './helpers.js';

const phi = () => structuredClone(loadConfig('phi3-tiny-short')) as Record<string, unknown> & { rope_scaling: Record<string, unknown> };

describe('LongRoPE regime rule (policy hf)', () => {
  const spec = parseRope(phi()); // L₀ = 32
  it('short while total length ≤ L₀, long once it exceeds L₀', () => {
    for (const n of [0, 1, 31, 32]) expect(spec.regimeFor(n).table).toBe('short');
    for (const n of [33, 34, 64, 128, 10_000]) expect(spec.regimeFor(n).table).toBe('long');
    expect(regimeFor(spec, 32)).toEqual(spec.regimeFor(32));
  });

  it('ids: table + scale + hash', () => {
    const a = Math.sqrt(1.4);
    expect(spec.regimeFor(32).id).toBe(`longrope:short:a=${spec.regimeFor(32).scale}:h=${spec.hash}`);
    expect(spec.regimeFor(33).id).toBe(`longrope:long:a=${spec.regimeFor(33).scale}:h=${spec.hash}`);
    expect(spec.regimeFor(33).scale).toBeCloseTo(a, 15);
    expect(spec.hash).toMatch(/^[0-9a-f]{16}$/);
    expect(spec.regimeFor(1).id).toBe(spec.regimeFor(32).id);
  });

  it('README worked example values', () => {
    expect(spec.hash).toBe('78c4148d0a42d3e0');
    expect(spec.regimeFor(32).id).toBe('longrope:short:a=1.1832159566199232:h=78c4148d0a42d3e0');
    expect(spec.regimeFor(33).id).toBe('longrope:long:a=1.1832159566199232:h=78c4148d0a42d3e0');
  });

  it('the hash changes with either factor list, θ or L₀, and not with unrelated keys', () => {
    const base = parseRope(phi()).hash;
    const s = phi();
    (s.rope_scaling.short_factor as number[])[7] = 1.7272;
    const l = phi();
    (l.rope_scaling.long_factor as number[])[15] = 65.4626;
    const t = { ...phi(), rope_theta: 10001 };
    const o = { ...phi(), original_max_position_embeddings: 64, max_position_embeddings: 256 };
    const u = { ...phi(), vocab_size: 1, num_hidden_layers: 99 };
    const hashes = [base, parseRope(s).hash, parseRope(l).hash, parseRope(t).hash, parseRope(o).hash];
    expect(new Set(hashes).size).toBe(5);
    expect(parseRope(u).hash).toBe(base);
  });

  it('transition: the step whose total length first exceeds L₀ changes the regime and requires re-encoding', () => {
    const tr = regimeTransition(spec, 32, 33);
    expect(tr.changed).toBe(true);
    expect(tr.reencode).toBe(true);
    expect(tr.from.table).toBe('short');
    expect(tr.to.table).toBe('long');
    expect(regimeTransition(spec, 31, 32)).toMatchObject({ changed: false, reencode: false });
    expect(regimeTransition(spec, 33, 34)).toMatchObject({ changed: false, reencode: false });
    // a fresh sequence has nothing cached to re-encode even when its prompt is long
    expect(regimeTransition(spec, 0, 64)).toMatchObject({ changed: true, reencode: false });
    // a trim back to ≤ L₀ is a change as well (the long-rotated keys no longer match the short table)
    expect(regimeTransition(spec, 40, 30)).toMatchObject({ changed: true, reencode: true });
  });

  it('chunked prefill picks the table from the final prompt length (phi3-tiny-long crossing: 28-token prompt, decode past 32)', () => {
    // a 64-token prompt prefilled in 16-token chunks: every chunk uses the regime of the total (64) → long
    const prompt = 64;
    const chunks = [16, 32, 48, 64].map(() => spec.regimeFor(prompt).table);
    expect(chunks).toEqual(['long', 'long', 'long', 'long']);
    // (deciding per chunk end would have been wrong for the first two chunks)
    expect([16, 32].map((end) => spec.regimeFor(end).table)).toEqual(['short', 'short']);
    // 28-token prompt, then decoding one token at a time: the switch happens when the 33rd token is fed
    let switchedAt = -1;
    for (let total = 29; total <= 40; total++) {
      if (regimeTransition(spec, total - 1, total).reencode && switchedAt < 0) switchedAt = total;
    }
    expect(switchedAt).toBe(33);
  });

  it('policy long-only: always the long table, one regime', () => {
    const s = parseRope(phi(), { longropePolicy: 'long-only' });
    expect(s.regimeFor(1).table).toBe('long');
    expect(s.regimeFor(1).id).toBe(s.regimeFor(1000).id);
    expect(hasMultipleRegimes(s)).toBe(false);
    expect(hasMultipleRegimes(spec)).toBe(true);
    expect(regimeTransition(s, 32, 33).changed).toBe(false);
    // same tables as policy hf → same hash; ids of the long regime agree
    expect(s.hash).toBe(spec.hash);
    expect(s.regimeFor(5).id).toBe(spec.regimeFor(500).id);
  });

  it('phimoe-tiny: explicit mscales appear in the ids, tables still switch', () => {
    const s = parseRope(loadConfig('phimoe-tiny'));
    expect(s.regimeFor(32).id).toMatch(/^longrope:short:a=1\.243163121016122:h=/);
    expect(s.regimeFor(33).id).toMatch(/^longrope:long:a=1\.243163121016122:h=/);
    expect(regimeTransition(s, 32, 33).reencode).toBe(true);
  });
});

describe('single-regime specs', () => {
  it.each([
    ['default', { rope_theta: 1e4, head_dim: 32 }, 1],
    ['linear', { rope_theta: 1e4, head_dim: 32, rope_scaling: { type: 'linear', factor: 2 } }, 1],
    ['llama3', { rope_theta: 5e5, head_dim: 32, rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 } }, 1],
    ['yarn', { rope_theta: 1e4, head_dim: 32, max_position_embeddings: 256, rope_scaling: { rope_type: 'yarn', factor: 4 } }, 0.1 * Math.log(4) + 1],
  ] as const)('%s: one regime for every length', (type, cfg, scale) => {
    const s = parseRope(cfg);
    expect(s.type).toBe(type);
    expect(hasMultipleRegimes(s)).toBe(false);
    const r = s.regimeFor(0);
    expect(r.table).toBe('single');
    expect(r.scale).toBeCloseTo(scale, 15);
    expect(s.regimeFor(1_000_000).id).toBe(r.id);
    expect(regimeTransition(s, 10, 100_000).changed).toBe(false);
  });

  it('dynamic NTK changes regime with every length past L₀', () => {
    const s = parseRope({ rope_theta: 1e4, head_dim: 32, max_position_embeddings: 64, rope_scaling: { type: 'dynamic', factor: 2 } });
    expect(hasMultipleRegimes(s)).toBe(true);
    expect(regimeTransition(s, 63, 64).changed).toBe(false);
    expect(regimeTransition(s, 64, 65)).toMatchObject({ changed: true, reencode: true });
    expect(s.regimeFor(65).id).toMatch(/^dynamic:dynamic@65:a=1:h=/);
  });

  it('lengths must be non-negative integers', () => {
    const s = parseRope({ rope_theta: 1e4, head_dim: 32 });
    expect(() => s.regimeFor(-1)).toThrow(RangeError);
    expect(() => s.regimeFor(1.5)).toThrow(RangeError);
    expect(() => regimeTransition(s, 0, NaN)).toThrow(RangeError);
  });
});
