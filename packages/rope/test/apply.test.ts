// RopeTable.apply through the native kernel: offset invariance (bitwise), batched/non-contiguous positions,
// agreement with a from-scratch rotation, pass-through channels, table growth.
import { describe, expect, it } from 'vitest';
import { parseRope, RopeTable, RopeTableCache, type RopeSpec } from '../src/index.js';
import { firstBitDiff, loadConfig, randomF32 } from './helpers.js';

interface Case {
  name: string;
  spec: RopeSpec;
  /** total length that selects the regime */
  length: number;
}

function cases(): Case[] {
  const phi = loadConfig('phi3-tiny-short');
  const moe = loadConfig('phimoe-tiny');
  const g4 = loadConfig('gemma4-tiny-dense');
  const g3n = loadConfig('gemma3n-tiny');
  const p3s = loadConfig('phi3small-tiny');
  const base = { rope_theta: 10000, head_dim: 32, max_position_embeddings: 256 };
  return [
    { name: 'default', spec: parseRope(base), length: 1 },
    { name: 'default interleaved', spec: parseRope(base, { layout: 'interleaved' }), length: 1 },
    { name: 'partial default (φ 0.5)', spec: parseRope({ ...base, partial_rotary_factor: 0.5 }), length: 1 },
    { name: 'linear', spec: parseRope({ ...base, rope_scaling: { type: 'linear', factor: 3 } }), length: 1 },
    { name: 'dynamic NTK', spec: parseRope({ ...base, rope_scaling: { type: 'dynamic', factor: 2, original_max_position_embeddings: 64 } }), length: 500 },
    { name: 'YaRN', spec: parseRope({ ...base, rope_scaling: { type: 'yarn', factor: 4, original_max_position_embeddings: 64 } }), length: 1 },
    {
      name: 'Llama 3',
      spec: parseRope({ ...base, rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 } }),
      length: 1,
    },
    { name: 'LongRoPE short (phi3-tiny-short)', spec: parseRope(phi), length: 20 },
    { name: 'LongRoPE long (phi3-tiny-short)', spec: parseRope(phi), length: 100 },
    { name: 'LongRoPE short interleaved', spec: parseRope(phi, { layout: 'interleaved' }), length: 20 },
    { name: 'LongRoPE mscale short (phimoe-tiny)', spec: parseRope(moe), length: 20 },
    { name: 'LongRoPE mscale long (phimoe-tiny)', spec: parseRope(moe), length: 100 },
    { name: 'LongRoPE partial (Phi-4-mini)', spec: parseRope(loadConfig('Phi-4-mini-instruct')), length: 5000 },
    { name: 'Gemma 4 proportional (full)', spec: parseRope(g4, { layerType: 'full_attention' }), length: 1 },
    { name: 'Gemma 4 sliding', spec: parseRope(g4, { layerType: 'sliding_attention' }), length: 1 },
    { name: 'Gemma 3n local', spec: parseRope(g3n, { layerType: 'sliding_attention' }), length: 1 },
    { name: 'Gemma 3n global', spec: parseRope(g3n, { layerType: 'full_attention' }), length: 1 },
    { name: 'Phi-3-small', spec: parseRope(p3s), length: 1 },
    { name: 'Phi-3-small position scale 0.5', spec: parseRope({ ...p3s, rope_position_scale: 0.5 }), length: 1 },
  ];
}

const H = 3;

/** Rotation computed from scratch in float64 from the table-independent frequencies (cos/sin of p·ω, × a). */
function rotateRef(x: Float32Array, nTok: number, D: number, pos: ArrayLike<number>, t: RopeTable): Float64Array {
  const out = Float64Array.from(x);
  const R = t.spec.tableDim;
  const half = R / 2;
  for (let tok = 0; tok < nTok; tok++) {
    for (let h = 0; h < H; h++) {
      const o = (tok * H + h) * D;
      for (let i = 0; i < half; i++) {
        const ang = pos[tok]! * t.invFreq[i]!;
        const c = Math.cos(ang) * t.scale;
        const s = Math.sin(ang) * t.scale;
        const [ia, ib] = t.spec.layout === 'interleaved' ? [2 * i, 2 * i + 1] : [i, i + half];
        const a = x[o + ia]!;
        const b = x[o + ib]!;
        out[o + ia] = a * c - b * s;
        out[o + ib] = b * c + a * s;
      }
    }
  }
  return out;
}

describe.each(cases())('$name', ({ spec, length }) => {
  const D = spec.headDim;
  const T = 40;

  it('token at offset p alone == same token inside a longer sequence (bitwise f32)', () => {
    for (const offset of [0, 1000]) {
      const x = randomF32(T * H * D, 7 + offset);
      const seq = x.slice();
      new RopeTable(spec, length).apply(seq, T, H, D, offset);
      const single = new RopeTable(spec, length, { initialRows: 1 }); // grows while the loop walks the positions
      for (let t = 0; t < T; t++) {
        const tok = x.slice(t * H * D, (t + 1) * H * D);
        single.apply(tok, 1, H, D, Int32Array.of(offset + t));
        expect(firstBitDiff(tok, seq.subarray(t * H * D, (t + 1) * H * D))).toBe(-1);
      }
    }
  });

  it('batched, non-contiguous positions (two sequences at different offsets) match per-token results bitwise', () => {
    const pos = Int32Array.of(5, 900, 6, 901, 0, 7, 902, 3);
    const n = pos.length;
    const x = randomF32(n * H * D, 99);
    const batch = x.slice();
    new RopeTable(spec, length, { initialRows: 2 }).apply(batch, n, H, D, pos);
    const one = new RopeTable(spec, length);
    for (let t = 0; t < n; t++) {
      const tok = x.slice(t * H * D, (t + 1) * H * D);
      one.apply(tok, 1, H, D, pos[t]!);
      expect(firstBitDiff(tok, batch.subarray(t * H * D, (t + 1) * H * D))).toBe(-1);
    }
  });

  it('agrees with a float64 rotation from scratch; channels past the rotated pairs pass through untouched', () => {
    const pos = Int32Array.from({ length: T }, (_, i) => 3 * i + 11);
    const x = randomF32(T * H * D, 1234);
    const y = x.slice();
    const table = new RopeTable(spec, length);
    table.apply(y, T, H, D, pos);
    const ref = rotateRef(x, T, D, pos, table);
    let maxErr = 0;
    for (let i = 0; i < y.length; i++) maxErr = Math.max(maxErr, Math.abs(y[i]! - ref[i]!));
    expect(maxErr).toBeLessThan(2e-6);
    // channels of pairs with frequency 0 (Gemma 4 tail) and channels ≥ tableDim are bit-identical to the input
    const half = spec.tableDim / 2;
    const still: number[] = [];
    for (let c = spec.tableDim; c < D; c++) still.push(c);
    if (spec.scaling.type === 'proportional') {
      for (let i = spec.scaling.rotatedPairs; i < half; i++) still.push(i, i + half);
    }
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < H; h++) {
        for (const c of still) {
          const k = (t * H + h) * D + c;
          expect(Object.is(y[k], x[k])).toBe(true);
        }
      }
    }
    if (spec.scaling.type !== 'proportional' && spec.tableDim === D) expect(still.length).toBe(0);
  });
});

describe('pass-through and layout specifics', () => {
  it('Gemma 4 E2B full layer: only channels [0,64) ∪ [256,320) change', () => {
    const spec = parseRope(loadConfig('gemma-4-E2B-it'), { layerType: 'full_attention' });
    const D = 512;
    const x = randomF32(4 * D, 5);
    const y = x.slice();
    new RopeTable(spec).apply(y, 4, 1, D, 17);
    for (let t = 0; t < 4; t++) {
      for (let c = 0; c < D; c++) {
        const rotated = c < 64 || (c >= 256 && c < 320);
        const same = Object.is(y[t * D + c], x[t * D + c]);
        if (!rotated) expect(same).toBe(true);
        else if (c !== 0 && c !== 256) expect(same).toBe(false); // pair 0 also turns at p = 17 (ω = 1)
      }
    }
  });

  it('LongRoPE with partial rotary: the attention factor scales only the rotated channels', () => {
    const spec = parseRope(loadConfig('Phi-4-mini-instruct'));
    const D = 128;
    const x = new Float32Array(D).fill(1);
    new RopeTable(spec, 10).apply(x, 1, 1, D, 0); // position 0: rotation is the identity, only a remains
    const a = Math.sqrt(1 + Math.log(32) / Math.log(4096));
    for (let c = 0; c < 96; c++) expect(x[c]).toBeCloseTo(a, 6);
    for (let c = 96; c < D; c++) expect(x[c]).toBe(1);
  });

  it('interleaved pairs (2i, 2i+1) vs half-split pairs (i, i+d/2) on a single pair', () => {
    const base = { rope_theta: 10000, head_dim: 4 };
    // pair 0 has ω = 1: at p = 1 rotate by 1 rad
    const half = new Float32Array([1, 0, 0, 0]);
    new RopeTable(parseRope(base)).apply(half, 1, 1, 4, 1);
    expect(half[0]).toBeCloseTo(Math.cos(1), 6);
    expect(half[2]).toBeCloseTo(Math.sin(1), 6);
    expect(half[1]).toBe(0);
    const inter = new Float32Array([1, 0, 0, 0]);
    new RopeTable(parseRope(base, { layout: 'interleaved' })).apply(inter, 1, 1, 4, 1);
    expect(inter[0]).toBeCloseTo(Math.cos(1), 6);
    expect(inter[1]).toBeCloseTo(Math.sin(1), 6);
    expect(inter[2]).toBe(0);
  });
});

describe('RopeTable', () => {
  const spec = parseRope(loadConfig('phi3-tiny-short'));

  it('grows by doubling and never changes rows it already had', () => {
    const t = new RopeTable(spec, 10, { initialRows: 8 });
    expect(t.rows).toBe(8);
    const before = t.cos.slice();
    t.ensure(9);
    expect(t.rows).toBe(16);
    t.ensure(100);
    expect(t.rows).toBe(100);
    expect(firstBitDiff(t.cos.subarray(0, before.length), before)).toBe(-1);
    const fresh = new RopeTable(spec, 10, { initialRows: 100 });
    expect(firstBitDiff(t.cos, fresh.cos)).toBe(-1);
    expect(firstBitDiff(t.sin, fresh.sin)).toBe(-1);
    expect(t.cos.length).toBe(100 * 16);
  });

  it('apply grows the table to the largest position', () => {
    const t = new RopeTable(spec, 10, { initialRows: 0 });
    expect(t.rows).toBe(0);
    t.apply(new Float32Array(2 * 32), 2, 1, 32, Int32Array.of(3, 70));
    expect(t.rows).toBe(71);
  });

  it('rejects a wrong head dim, negative positions, a foreign regime and positions past maxRows', () => {
    const t = new RopeTable(spec, 10, { maxRows: 64 });
    expect(() => t.apply(new Float32Array(64), 1, 1, 64, 0)).toThrow(/headDim 64 differs .* 32/);
    expect(() => t.apply(new Float32Array(32), 1, 1, 32, Int32Array.of(-1))).toThrow(/negative/);
    expect(() => t.apply(new Float32Array(32), 1, 1, 32, 64)).toThrow(/exceeds the table limit of 64/);
    const other = parseRope(loadConfig('phimoe-tiny'));
    expect(() => new RopeTable(spec, other.regimeFor(1))).toThrow(/does not belong/);
    expect(() => new RopeTable(spec)).toThrow(/several regimes/);
  });

  it('the short and long tables differ, the cache keeps one table per regime', () => {
    const cache = new RopeTableCache(spec);
    const s = cache.get(32);
    const l = cache.get(33);
    expect(cache.get(1)).toBe(s);
    expect(cache.get(spec.regimeFor(1000))).toBe(l);
    expect(cache.size).toBe(2);
    expect(s.regime.table).toBe('short');
    expect(l.regime.table).toBe('long');
    expect(firstBitDiff(s.cos, l.cos)).not.toBe(-1);
  });
});
