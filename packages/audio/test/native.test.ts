/**
 * The audio kernels of @mlxcel/core-native against plain-JS references: conv2d, the banded local
 * attention vs the blocked formulation of the references (chunks, context windows, relative shift,
 * masks), the causal depthwise conv, GLU/clamp, and the argument checks.
 */
import * as native from '@mlxcel/core-native';
import { describe, expect, it } from 'vitest';
import { gemma4Window, inclusiveWindow } from '../src/index.js';
import { maxAbsDiff } from '@mlxcel/tensor';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}
const rand = (n: number, r: () => number, scale = 1) => Float32Array.from({ length: n }, () => r() * scale);

describe('conv2d', () => {
  it.each([
    [7, 9, 1, 4, 3, 3, 2, 2, [1, 1, 1, 1]],
    [8, 6, 3, 5, 3, 3, 2, 2, [0, 2, 1, 1]],
    [5, 5, 2, 3, 2, 3, 1, 2, [0, 0, 0, 1]],
  ] as const)('h %i w %i cin %i cout %i k %ix%i s %i,%i matches a direct loop', (h, w, cin, cout, kh, kw, sh, sw, pad) => {
    const r = rng(h * 31 + cin);
    const x = rand(h * w * cin, r), wt = rand(cout * kh * kw * cin, r);
    const [pt, pb, pl, pr] = pad;
    const oh = Math.floor((h + pt + pb - kh) / sh) + 1, ow = Math.floor((w + pl + pr - kw) / sw) + 1;
    const out = new Float32Array(oh * ow * cout);
    const dims = native.conv2d({ x, h, w, cin, weight: wt, cout, kh, kw, strideH: sh, strideW: sw, padTop: pt, padBottom: pb, padLeft: pl, padRight: pr, out });
    expect(dims).toEqual({ outH: oh, outW: ow });
    const ref = new Float32Array(out.length);
    for (let oy = 0; oy < oh; oy++)
      for (let ox = 0; ox < ow; ox++)
        for (let o = 0; o < cout; o++) {
          let s = 0;
          for (let y = 0; y < kh; y++)
            for (let xx = 0; xx < kw; xx++)
              for (let i = 0; i < cin; i++) {
                const iy = oy * sh + y - pt, ix = ox * sw + xx - pl;
                if (iy >= 0 && iy < h && ix >= 0 && ix < w) s += wt[((o * kh + y) * kw + xx) * cin + i]! * x[(iy * w + ix) * cin + i]!;
              }
          ref[(oy * ow + ox) * cout + o] = s;
        }
    expect(maxAbsDiff(out, ref)).toBeLessThan(1e-5);
  });

  it('rejects buffers that are too small', () => {
    const base = { x: new Float32Array(10), h: 4, w: 4, cin: 1, weight: new Float32Array(9), cout: 1, kh: 3, kw: 3, strideH: 1, strideW: 1, padTop: 0, padBottom: 0, padLeft: 0, padRight: 0, out: new Float32Array(4) };
    expect(() => native.conv2d(base)).toThrow(/conv2d: x has 10 elements, needs 16/);
    expect(() => native.conv2d({ ...base, x: new Float32Array(16), kh: 5 })).toThrow(/smaller than the kernel/);
  });
});

/** The blocked local attention of the references (docs/architecture/audio.md §5.1), written out directly. */
function blockedAttention(o: {
  q: Float32Array; k: Float32Array; v: Float32Array; E: Float32Array; T: number; N: number; hd: number;
  W: number; P: number; F: number; valid: Uint8Array; cap: number; admit: (w: number, c: number) => boolean;
}): Float32Array {
  const { q, k, v, E, T, N, hd, W, P, F, valid, cap, admit } = o;
  const C = W + P + F, R = P + F + 1, D = N * hd;
  const out = new Float32Array(T * D);
  for (let u = 0; u * W < T; u++)
    for (let w = 0; w < W; w++) {
      const t = u * W + w;
      if (t >= T) continue;
      for (let n = 0; n < N; n++) {
        const logits = new Float64Array(C);
        for (let c = 0; c < C; c++) {
          const s = u * W - P + c;
          let ac = 0, bd = 0;
          for (let d = 0; d < hd; d++) {
            const qd = q[t * D + n * hd + d]!;
            if (s >= 0 && s < T) ac += qd * k[s * D + n * hd + d]!;
            const r = c - w; // the relative shift puts table row c - w at (w, c), zeros outside
            if (r >= 0 && r < R) bd += qd * E[r * D + n * hd + d]!;
          }
          let l = cap * Math.tanh((ac + bd) / cap);
          const keyValid = s >= 0 && s < T && valid[s] === 1;
          if (!(admit(w, c) && keyValid)) l = -1e9;
          logits[c] = l;
        }
        const mx = Math.max(...logits);
        let sum = 0;
        const p = logits.map((l) => { const e = Math.exp(l - mx); sum += e; return e; });
        for (let c = 0; c < C; c++) {
          const s = u * W - P + c;
          if (s < 0 || s >= T) continue;
          for (let d = 0; d < hd; d++) out[t * D + n * hd + d] += (p[c]! / sum) * v[s * D + n * hd + d]!;
        }
      }
    }
  return out;
}

describe('localAttention (banded) equals the blocked reference', () => {
  const cases = [
    { name: 'Gemma 3n rule, W 12 P 12 F 0', W: 12, left: 13, right: 0, rule: '3n' },
    { name: 'Gemma 4 rule, W 12 P 12 F 0', W: 12, left: 13, right: 0, rule: 'g4' },
    { name: 'Gemma 3n rule with look-ahead, W 3 P 4 F 2', W: 3, left: 5, right: 2, rule: '3n' },
    { name: 'Gemma 4 rule with look-ahead, W 3 P 4 F 2', W: 3, left: 5, right: 2, rule: 'g4' },
  ] as const;
  it.each(cases)('$name', ({ W, left, right, rule }) => {
    const r = rng(left * 7 + right + (rule === 'g4' ? 1 : 0));
    const T = 29, N = 2, hd = 8, D = N * hd, P = left - 1, F = right, R = P + F + 1;
    const q = rand(T * D, r, 2), k = rand(T * D, r, 2), v = rand(T * D, r), E = rand(R * D, r, 2);
    const valid = new Uint8Array(T).fill(1);
    valid.fill(0, 25); // padding at the end, as the feature extractors produce it
    // Definitions straight from the references: 3n's tril construction, Gemma 4's sliding_window_mask_function.
    const admit = rule === '3n'
      ? (w: number, c: number) => c >= w && c <= w + P + F
      : (w: number, c: number) => { const dist = w + P - c; return (dist >= 0 && dist < P) || (dist < 0 && -dist < F); };
    const ref = blockedAttention({ q, k, v, E, T, N, hd, W, P, F, valid, cap: 50, admit });
    const out = new Float32Array(T * D);
    const window = rule === '3n' ? inclusiveWindow(left, right) : gemma4Window(left, right);
    native.localAttention({ q, k, v, n: T, nHeads: N, headDim: hd, rel: E, nRel: R, relDist0: P, valid, ...window, softcap: 50, out });
    // Valid query rows only: padded queries are discarded downstream (the reference gives them a
    // uniform mix of its context, the kernel zeros).
    expect(maxAbsDiff(out.subarray(0, 25 * D), ref.subarray(0, 25 * D))).toBeLessThan(1e-5);
  });

  it('admits 12 keys per interior query for Gemma 4 and 13 for Gemma 3n', () => {
    const count = (w: { maxPast: number; maxFuture: number }) => w.maxPast + w.maxFuture + 1;
    expect(count(gemma4Window(13, 0))).toBe(12);
    expect(count(inclusiveWindow(13, 0))).toBe(13);
    expect(gemma4Window(13, 2)).toEqual({ maxPast: 11, maxFuture: 1 }); // never dist == -context_right
  });

  it('checks its arguments', () => {
    const z = new Float32Array(16);
    const base = { q: z, k: z, v: z, n: 2, nHeads: 1, headDim: 8, rel: null, nRel: 0, relDist0: 0, maxPast: 1, maxFuture: 0, out: new Float32Array(16) };
    expect(() => native.localAttention({ ...base, q: new Float32Array(4) })).toThrow(/q has 4 elements, needs 16/);
    expect(() => native.localAttention({ ...base, maxPast: -1, maxFuture: -1 })).toThrow(/admits no distance/);
    expect(() => native.localAttention({ ...base, valid: new Uint8Array(1) })).toThrow(/valid has 1 entries, needs 2/);
    expect(() => native.localAttention({ ...base, out: z })).toThrow(/must not alias/);
  });
});

describe('small kernels', () => {
  it('dwconv1dCausal is a causal depthwise conv', () => {
    const r = rng(5);
    const T = 11, C = 6, K = 5;
    const x = rand(T * C, r), w = rand(C * K, r);
    const out = new Float32Array(T * C);
    native.dwconv1dCausal(x, T, C, w, K, out);
    const ref = new Float32Array(T * C);
    for (let t = 0; t < T; t++)
      for (let c = 0; c < C; c++)
        for (let j = 0; j < K; j++) {
          const s = t - (K - 1) + j;
          if (s >= 0) ref[t * C + c] += w[c * K + j]! * x[s * C + c]!;
        }
    expect(maxAbsDiff(out, ref)).toBeLessThan(1e-6);
    expect(() => native.dwconv1dCausal(x, T, C, w, K, x)).toThrow(/must not alias/);
  });

  it('glu and clamp', () => {
    const x = Float32Array.from([1, -2, 0.5, 3, 0, -1, 2, 4]);
    const g = new Float32Array(4);
    native.glu(x, 2, 2, g);
    const sig = (v: number) => 1 / (1 + Math.exp(-v));
    expect(maxAbsDiff(g, [1 * sig(0.5), -2 * sig(3), 0 * sig(2), -1 * sig(4)])).toBeLessThan(1e-6);
    const c = new Float32Array(8);
    native.clamp(x, -1, 2, c);
    expect(Array.from(c)).toEqual([1, -1, 0.5, 2, 0, -1, 2, 2]);
    expect(() => native.clamp(x, 2, 1, c)).toThrow(/lo 2.* > hi 1/);
  });

  it('logMel checks its arguments', () => {
    const base = {
      signal: new Float32Array(1000), nFrames: 3, frameLength: 320, hop: 160, fftSize: 512, window: new Float32Array(320),
      melFilters: new Float64Array(257 * 4), nMel: 4, floorMode: 'add' as const, melFloor: 1e-3, out: new Float32Array(12),
    };
    expect(() => native.logMel({ ...base, fftSize: 500 })).toThrow(/fftSize 500 is not a power of two/);
    expect(() => native.logMel({ ...base, nFrames: 6 })).toThrow(/signal has 1000 samples, 6 frames need 1121/);
    expect(() => native.logMel({ ...base, melFilters: new Float32Array(257 * 4) as unknown as Float64Array })).toThrow(/melFilters must be a Float64Array/);
    expect(() => native.logMel({ ...base, floorMode: 'min' as 'add' })).toThrow(/floorMode must be 'add' or 'max'/);
    expect(() => native.logMel({ ...base, melFloor: 0 })).toThrow(/melFloor must be a finite number > 0/);
    native.logMel(base); // silence with floor 1e-3 -> ln(1e-3)
    for (const v of base.out) expect(v).toBeCloseTo(Math.log(1e-3), 5);
  });
});
