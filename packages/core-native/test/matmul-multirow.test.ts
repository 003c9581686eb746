// The multi-row GEMV (src/isa/gemv.h, M = 2..16: batched decode, one row per sequence) on every kernel
// variant this machine runs. It streams each weight row once for all M rows of x, and must give
//   1. each row bit-identical to a call with that row alone (M = 1), in every precision mode (exact, and
//      the integer activations of "fast" / "int8"): the batched == single guarantee of the engine's
//      continuous batching rests on this;
//   2. results within the f32 bound of matmul.test.ts against the float64 reference.
// Shapes cover: several L2 panels per task (N large against 64 KB / row bytes), the R-row tiles (x
// planes too large for L1: K = 1536 with 4-row blocks), ragged blocks (M = 5, 7, 13), every code width
// (the integer-dot paths take 4/8-bit; 2/3-bit run the generic decoder) and float weights.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';
import { checkMatmul, dequantRef, encodeFloats, decodeFloat, nativeQ, quantMagnitude, randF32, randomQ, VARIANTS, type ScaleDtype } from './helpers.js';

const QUANT_BOUND = 4e-6;
const FLOAT_BOUND = 2e-6;
const initialIsa = native.cpuInfo().isa;
afterAll(() => native.setIsa(initialIsa));
afterEach(() => native.setMatmulPrecision('exact'));

function run(x: Float32Array, M: number, w: native.NativeWeight, bias: Float32Array | null): Float32Array {
  const y = new Float32Array(M * w.rows).fill(NaN);
  native.matmul(x, M, w, bias, y);
  return y;
}

/** Row m of the M-row result must carry exactly the bits of the one-row call. */
function expectRowsEqualSingle(x: Float32Array, M: number, w: native.NativeWeight, bias: Float32Array | null, label: string): Float32Array {
  const K = w.cols, N = w.rows;
  const y = run(x, M, w, bias);
  for (let m = 0; m < M; m++) {
    const one = run(x.subarray(m * K, (m + 1) * K), 1, w, bias);
    const row = y.subarray(m * N, (m + 1) * N);
    for (let n = 0; n < N; n++)
      if (!Object.is(row[n], one[n]))
        throw new Error(`${label}: row ${m} of ${M}, y[${n}] = ${row[n]} but alone ${one[n]}`);
  }
  return y;
}

const WIDTHS = [2, 3, 4, 5, 7, 8, 13, 16];

for (const isa of VARIANTS) {
  describe(`multi-row GEMV [${isa}]`, () => {
    it('quantized 2/3/4/8-bit, groups 32/64/128: every row equals its M = 1 result, M = 2..16', () => {
      native.setIsa(isa);
      for (const bits of [2, 3, 4, 8])
        for (const [group, sd] of [[32, 1], [64, 2], [128, 0]] as [number, ScaleDtype][]) {
          // K = 1536: 4 x rows of digit planes (18 KB) exceed the one-row-at-a-time limit (R-row tiles);
          // N = 300 rows of K / 2 bytes: more than one 64 KB panel per task for 4-bit.
          const N = 300, K = 1536;
          const w = nativeQ(randomQ(N, K, bits, group, sd, bits * 31 + group));
          const bias = randF32(N, bits);
          for (const M of WIDTHS) {
            const x = randF32(M * K, M * 7 + bits, -2, 2);
            x[(M - 1) * K + 11] = 40; // an outlier in the last row: its group scale must stay its own
            expectRowsEqualSingle(x, M, w, M % 2 ? bias : null, `${isa} q${bits} g${group} M=${M}`);
          }
        }
    });

    it('float weights (f32 / f16 / bf16): every row equals its M = 1 result, M = 2..16', () => {
      native.setIsa(isa);
      for (const dt of [0, 1, 2] as const) {
        const N = 77, K = 1000; // K not a multiple of the vector width: the scalar tail runs too
        const v = randF32(N * K, 9 + dt);
        const w: native.NativeWeight = { dtype: dt, data: encodeFloats(v, dt), rows: N, cols: K };
        for (const M of WIDTHS) expectRowsEqualSingle(randF32(M * K, M + dt), M, w, randF32(N, 4), `${isa} dtype ${dt} M=${M}`);
      }
    });

    it('within the f32 bound of the float64 reference, M = 6, 11, 16', () => {
      native.setIsa(isa);
      const N = 45, K = 512;
      for (const bits of [4, 8, 3]) {
        const q = randomQ(N, K, bits, 64, 2, 70 + bits);
        const W = dequantRef(q), mag = quantMagnitude(q);
        for (const M of [6, 11, 16]) {
          const x = randF32(M * K, M + 100 * bits, -2, 2);
          const bias = randF32(N, M);
          checkMatmul(run(x, M, nativeQ(q), bias), x, M, K, W, N, bias, QUANT_BOUND, `${isa} q${bits} M=${M}`, mag);
        }
      }
      const v = randF32(N * K, 3);
      const data = encodeFloats(v, 2);
      const ref = new Float64Array(N * K);
      for (let i = 0; i < N * K; i++) ref[i] = decodeFloat(data, 2, i);
      const x = randF32(16 * K, 5);
      checkMatmul(run(x, 16, { dtype: 2, data, rows: N, cols: K }, null), x, 16, K, ref, N, null, FLOAT_BOUND, `${isa} bf16 M=16`);
    });

    it('a non-finite row stays non-finite and leaves the other rows equal to their M = 1 results', () => {
      native.setIsa(isa);
      const N = 40, K = 512;
      for (const bits of [4, 8]) {
        const w = nativeQ(randomQ(N, K, bits, 64, 0, bits + 3));
        const x = randF32(9 * K, 8);
        x[4 * K + 100] = NaN;
        x[7 * K + 3] = -Infinity;
        const y = expectRowsEqualSingle(x, 9, w, null, `${isa} q${bits} non-finite`);
        for (const m of [4, 7]) expect(Array.from(y.subarray(m * N, (m + 1) * N)).every((v) => !Number.isFinite(v))).toBe(true);
        expect(Array.from(y.subarray(0, 4 * N)).every(Number.isFinite)).toBe(true);
      }
    });

    it('"fast" and "int8" precisions: every row equals its M = 1 result too (integer activations on avx512vnni and avx2 q4, exact elsewhere)', () => {
      native.setIsa(isa);
      // K = 1536: 24 groups of 64, a partial block of 16 (the VNNI kernels fold the bias half into the
      // accumulators); K = 2048: 32, whole blocks (the bias half is a separate dot at the row's end).
      const N = 300;
      for (const [bits, K] of [[4, 1536], [8, 1536], [4, 2048]] as const) {
        const w = nativeQ(randomQ(N, K, bits, 64, 2, 12 + bits + K));
        for (const M of WIDTHS) {
          const x = randF32(M * K, 13 + M, -2, 2);
          const exact = run(x, M, w, null);
          for (const mode of ['fast', 'int8'] as const) {
            native.setMatmulPrecision(mode);
            const y = expectRowsEqualSingle(x, M, w, null, `${isa} q${bits} K=${K} ${mode} M=${M}`);
            // Integer activations in the GEMV on avx512vnni (4/8-bit) and avx2 (4-bit); the exact path elsewhere.
            if (!(isa === 'avx512vnni' || isa === 'avx512amx' || (isa === 'avx2' && bits === 4))) expect(y).toEqual(exact);
            native.setMatmulPrecision('exact');
          }
        }
      }
    });
  });
}
