// Conformance of the integer-activation GEMM (setMatmulPrecision('fast' | 'int8' | 'mixed'), src/isa/gemm_q8act.h)
// on every kernel variant this machine runs, and of the GEMV's integer-activation planes (M <= 16,
// avx512vnni, avx2). Where it applies (GEMM: 4-bit weights on avx2 / avx2vnni / avx512vnni / avx512amx / neon_dotprod,
// 8-bit on the VNNI and AMX variants, M > 16; GEMV: 4-/8-bit on avx512vnni and avx512amx, 4-bit on avx2; group 32/64/128) the result must
// equal its definition,
//   y[m, n] = sum_g ( s[n,g] * dx[m,g] * sum_{c in g} q[n,c] * xq[m,c] + b[n,g] * sum_{c in g} x[m,c] ) + bias[n],
//   dx[m,g] = max_{c in g} |x[m,c]| / T,  xq = round_half_even(f32(x * f32(T / max))),
//   T = 32639 ("fast": two int8 digit planes) or 127 ("int8")
// to f32 arithmetic (the same relative measure and bound as matmul.test.ts); everywhere else the fast
// mode must give the exact path's bits.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';
import { nativeQ, q8actReference as reference, randF32, randomQ, VARIANTS, type ScaleDtype } from './helpers.js';

const BOUND = 4e-6;
const initialIsa = native.cpuInfo().isa;
afterAll(() => native.setIsa(initialIsa));
afterEach(() => native.setMatmulPrecision('exact'));

/** Code widths the fast GEMM (M > 16) takes per variant (the others keep the exact path). */
const FAST_BITS: Record<string, number[]> = { avx2: [4], avx2vnni: [4, 8], avx512vnni: [4, 8], avx512amx: [4, 8], neon_dotprod: [4] };
/** Code widths the GEMV (M <= 16) takes the integer activations for (K % 128 == 0 here). */
const GEMV_FAST_BITS: Record<string, number[]> = { avx2: [4], avx512vnni: [4, 8], avx512amx: [4, 8] };

function run(x: Float32Array, M: number, w: native.NativeWeight, bias: Float32Array | null, mode: native.MatmulPrecision): Float32Array {
  native.setMatmulPrecision(mode);
  const y = new Float32Array(M * w.rows).fill(NaN);
  native.matmul(x, M, w, bias, y);
  return y;
}

describe('setMatmulPrecision', () => {
  it('defaults to exact, takes exact | fast | int8 | mixed | balanced, and names the modes in its error', () => {
    expect(native.matmulPrecision()).toBe('exact');
    expect(native.setMatmulPrecision('int8')).toBe('int8');
    expect(native.matmulPrecision()).toBe('int8');
    expect(native.setMatmulPrecision('mixed')).toBe('mixed');
    expect(native.matmulPrecision()).toBe('mixed');
    expect(native.setMatmulPrecision('balanced')).toBe('balanced');
    expect(native.matmulPrecision()).toBe('balanced');
    expect(native.setMatmulPrecision('fast')).toBe('fast');
    expect(native.matmulPrecision()).toBe('fast');
    expect(() => native.setMatmulPrecision('int4' as 'fast')).toThrow(/"exact", "fast", "int8", "mixed" or "balanced"/);
    expect(native.matmulPrecision()).toBe('fast');
    // The exported list is exactly the modes the binding takes.
    expect([...native.MATMUL_PRECISIONS]).toEqual(['exact', 'fast', 'int8', 'mixed', 'balanced']);
    for (const p of native.MATMUL_PRECISIONS) expect(native.setMatmulPrecision(p)).toBe(p);
  });

  // "mixed" is a per-weight choice between the two integer paths, so its results are theirs to the bit:
  // a weight marked ffn takes int8's, any other fast's, in the GEMM (M > 16) and the GEMV (M <= 16).
  it('mixed: a weight marked ffn gets the int8 result, an unmarked one the fast result, bit for bit', () => {
    const N = 48, K = 512;
    const q = randomQ(N, K, 4, 64, 2, 91);
    const plain = nativeQ(q), ffn: native.NativeWeight = { ...nativeQ(q), ffn: true };
    for (const M of [1, 8, 40]) {
      const x = randF32(M * K, 90 + M, -2, 2);
      expect(run(x, M, ffn, null, 'mixed'), `ffn M=${M}`).toEqual(run(x, M, plain, null, 'int8'));
      expect(run(x, M, plain, null, 'mixed'), `plain M=${M}`).toEqual(run(x, M, plain, null, 'fast'));
      expect(run(x, M, ffn, null, 'fast'), `ffn under fast M=${M}`).toEqual(run(x, M, plain, null, 'fast'));
      expect(run(x, M, ffn, null, 'exact'), `ffn under exact M=${M}`).toEqual(run(x, M, plain, null, 'exact'));
    }
  });

  // "balanced" is the same per-weight choice by role: only ffn "input" (gate / up) weights take int8's
  // result; "output" (down), role-less ffn and unmarked weights take fast's. "mixed" gives int8 to every role.
  it('balanced: only an ffn "input" weight gets the int8 result; mixed gives it to every ffn role', () => {
    const N = 48, K = 512;
    const q = randomQ(N, K, 4, 64, 2, 93);
    const plain = nativeQ(q);
    const input: native.NativeWeight = { ...plain, ffn: 'input' }, output: native.NativeWeight = { ...plain, ffn: 'output' };
    const any: native.NativeWeight = { ...plain, ffn: true };
    for (const M of [1, 8, 40]) {
      const x = randF32(M * K, 70 + M, -2, 2);
      const fast = run(x, M, plain, null, 'fast'), int8 = run(x, M, plain, null, 'int8');
      const integer = (M > 16 ? FAST_BITS : GEMV_FAST_BITS)[initialIsa]?.includes(4);
      if (integer) expect(fast, `fast and int8 differ at M=${M} (else this test proves nothing)`).not.toEqual(int8);
      expect(run(x, M, input, null, 'balanced'), `input M=${M}`).toEqual(int8);
      expect(run(x, M, output, null, 'balanced'), `output M=${M}`).toEqual(fast);
      expect(run(x, M, any, null, 'balanced'), `ffn: true M=${M}`).toEqual(fast);
      expect(run(x, M, plain, null, 'balanced'), `plain M=${M}`).toEqual(fast);
      for (const w of [input, output, any]) expect(run(x, M, w, null, 'mixed'), `mixed ffn ${String(w.ffn)} M=${M}`).toEqual(int8);
    }
  });

  it('rejects an ffn mark other than a boolean, "input" or "output", naming the field', () => {
    const msg = /weight\.ffn must be a boolean, "input" or "output"/;
    const w = { ...nativeQ(randomQ(4, 64, 4, 64, 2, 3)), ffn: 1 } as unknown as native.NativeWeight;
    expect(() => native.matmul(new Float32Array(64), 1, w, null, new Float32Array(4))).toThrow(msg);
    const fw = { dtype: 0, data: new Float32Array(4 * 64), rows: 4, cols: 64, ffn: 'yes' } as unknown as native.NativeWeight;
    expect(() => native.matmul(new Float32Array(64), 1, fw, null, new Float32Array(4))).toThrow(msg);
  });
});

for (const isa of VARIANTS) {
  describe(`fast-activation GEMM [${isa}]`, () => {
    const fastBits = FAST_BITS[isa] ?? [];

    // N: not a multiple of any tile width; K: one 512-wide chunk plus a partial one; M: one and two
    // row blocks of 256 with ragged micro-kernel tails.
    for (const bits of [4, 8])
      for (const [group, sd] of [[32, 1], [64, 2], [128, 0]] as [number, ScaleDtype][]) {
        it(`${bits}-bit, group ${group}, ${['f32', 'f16', 'bf16'][sd]} scales: ${fastBits.includes(bits) ? 'equals its definition' : 'keeps the exact path'}`, () => {
          native.setIsa(isa);
          // Kept small: the float64 reference runs in JS on this worker (a long block starves vitest's RPC).
          const N = 37, K = 640;
          const q = randomQ(N, K, bits, group, sd, bits * 1000 + group);
          const w = nativeQ(q);
          const bias = randF32(N, 11);
          // 530: more than one block of rows per task (kQ8MB = 512 rounded down to whole x panels of 4 or 6 rows).
          for (const M of group === 64 ? [17, 33, 260, 530] : [17, 33, 260]) {
            // A large outlier per row: the per-group scale must confine its effect to its group.
            const x = randF32(M * K, M + group, -2, 2);
            for (let m = 0; m < M; m++) x[m * K + ((m * 37) % K)] = 50;
            const exact = run(x, M, w, bias, 'exact');
            for (const [mode, T] of [['fast', 32639], ['int8', 127]] as const) {
              const fast = run(x, M, w, bias, mode);
              if (!fastBits.includes(bits)) {
                expect(fast).toEqual(exact);
                continue;
              }
              const { y, norm } = reference(x, M, q, bias, T);
              let worst = 0;
              for (let i = 0; i < y.length; i++) worst = Math.max(worst, Math.abs(fast[i]! - y[i]!) / norm[i]!);
              expect(worst, `${mode} M=${M}`).toBeLessThanOrEqual(BOUND);
              expect(fast).not.toEqual(exact); // the integer path really ran
            }
          }
        });
      }

    // One k-chunk (K <= 512): whole output tiles are stored into y by the micro-kernel itself, a partial
    // last tile through the accumulator copy; both must give the definition, and the same bits.
    it(`one k-chunk (K = 256): whole tiles written directly equal the definition and, bit for bit, the same rows of a partial tile${fastBits.length ? '' : ' (exact path here)'}`, () => {
      native.setIsa(isa);
      const K = 256, N = 69; // two whole 32-row tiles and a partial one (or 4 + 1 of 16)
      for (const bits of fastBits.length ? fastBits : [4]) {
        const q = randomQ(N, K, bits, 64, 2, 77 + bits);
        const sb = q.scales.length / ((N * K) / 64); // bytes per scale
        const first = { ...q, rows: 37, packed: q.packed.subarray(0, (37 * K * bits) / 8), scales: q.scales.subarray(0, ((37 * K) / 64) * sb), biases: q.biases.subarray(0, ((37 * K) / 64) * sb) };
        for (const bias of [randF32(N, 5), null]) {
          for (const M of [17, 260]) {
            const x = randF32(M * K, M + bits, -2, 2);
            for (const [mode, T] of [['fast', 32639], ['int8', 127]] as const) {
              const all = run(x, M, nativeQ(q), bias, mode);
              const part = run(x, M, nativeQ(first), bias ? bias.subarray(0, 37) : null, mode);
              if (fastBits.includes(bits)) {
                const { y, norm } = reference(x, M, q, bias, T);
                let worst = 0;
                for (let i = 0; i < y.length; i++) worst = Math.max(worst, Math.abs(all[i]! - y[i]!) / norm[i]!);
                expect(worst, `${mode} ${bits}-bit M=${M}`).toBeLessThanOrEqual(BOUND);
              }
              // Rows 32..36: a whole tile's (direct) in `all`, the partial tile's (copied) in `part`.
              for (let m = 0; m < M; m++)
                expect(Array.from(all.subarray(m * N, m * N + 37)), `${mode} ${bits}-bit M=${M} row ${m}`).toEqual(Array.from(part.subarray(m * 37, m * 37 + 37)));
            }
          }
        }
      }
    });

    it('M <= 16 (GEMV): the same integer activations on avx512vnni (4-/8-bit) and avx2 (4-bit: s16 for fast, s8 for int8), groups 32 / 64 / 128, the exact path elsewhere', () => {
      native.setIsa(isa);
      const K = 256, N = 40;
      for (const [bits, group] of [[4, 64], [8, 64], [4, 32], [4, 128]] as const) {
        const q = randomQ(N, K, bits, group, 0, 5 + bits + group);
        const w = nativeQ(q);
        for (const M of [1, 4, 8, 16]) {
          const x = randF32(M * K, M, -2, 2);
          x[K - 1] = 30; // an outlier: its group's scale must stay its own
          for (const [mode, T] of [['fast', 32639], ['int8', 127]] as const) {
            const got = run(x, M, w, null, mode);
            if (!(GEMV_FAST_BITS[isa] ?? []).includes(bits)) {
              expect(got).toEqual(run(x, M, w, null, 'exact'));
              continue;
            }
            const { y, norm } = reference(x, M, q, null, T);
            let worst = 0;
            for (let i = 0; i < y.length; i++) worst = Math.max(worst, Math.abs(got[i]! - y[i]!) / norm[i]!);
            expect(worst, `${mode} q${bits} g${group} M=${M}`).toBeLessThanOrEqual(BOUND);
            // Row by row as a call of that row alone (batched decode == single in this precision).
            for (let m = 0; m < M; m++)
              expect(got.subarray(m * N, (m + 1) * N), `${mode} q${bits} g${group} M=${M} row ${m}`).toEqual(run(x.subarray(m * K, (m + 1) * K), 1, w, null, mode));
          }
        }
      }
    });

    it('3-bit codes and float weights keep the exact path; a non-finite x falls back to it', () => {
      native.setIsa(isa);
      const K = 256, N = 40;
      const q4 = nativeQ(randomQ(N, K, 4, 64, 0, 5));
      const x = randF32(24 * K, 3);
      const q3 = nativeQ(randomQ(N, K, 3, 64, 0, 6));
      expect(run(x, 24, q3, null, 'fast')).toEqual(run(x, 24, q3, null, 'exact'));
      const fw: native.NativeWeight = { dtype: 0, data: randF32(N * K, 7), rows: N, cols: K };
      expect(run(x, 24, fw, null, 'fast')).toEqual(run(x, 24, fw, null, 'exact'));
      x[5 * K + 9] = NaN;
      const y = run(x, 24, q4, null, 'fast');
      expect(y).toEqual(run(x, 24, q4, null, 'exact'));
      expect(Number.isNaN(y[5 * N])).toBe(true);
    });
  });
}

// The AMX micro-kernel (src/isa/gemm_amx.h) does q8act_micro's integer sums with tile instructions and its
// scaling with the same operations in the same order, so the two variants must agree to the bit: at a
// transposing-repack shape (K % 128 == 0) and a generic one, both precisions, ragged M and N.
describe.runIf(VARIANTS.includes('avx512amx') && VARIANTS.includes('avx512vnni'))('AMX GEMM equals the avx512vnni GEMM bit for bit', () => {
  for (const [bits, group, K] of [[4, 64, 1536], [4, 32, 640], [8, 128, 1024], [4, 128, 768]] as const)
    it(`${bits}-bit, group ${group}, K = ${K}`, () => {
      const N = 70;
      const w = nativeQ(randomQ(N, K, bits, group, 2, 77 + K));
      const bias = randF32(N, 12);
      for (const M of [17, 48, 531]) {
        const x = randF32(M * K, M + K, -3, 3);
        for (const mode of ['fast', 'int8'] as const) {
          native.setIsa('avx512vnni');
          const ref = run(x, M, w, bias, mode);
          native.setIsa('avx512amx');
          const got = run(x, M, w, bias, mode);
          expect(got, `${mode} M=${M}`).toEqual(ref);
        }
      }
    });
});
