// Conformance of matmul (GEMV for M <= 16, tiled GEMM above) and gather on every kernel variant this
// machine runs, against float64 references built from the format descriptions (helpers.ts).
//
// Error measure: for y[m, n] = x_m . W_n + bias_n, |y - ref| / (sum_k |x_mk| mag(W_nk) + |bias_n|), the error
// relative to the size of the terms being summed (mag = |W| for float weights, |s q| + |b| for MLX
// affine ones), so cancellation in the sum does not hide errors. W is the exact weight the file stores
// (f16/bf16 widened exactly; quantized: s * q + b in float64), so the only error allowed is f32 arithmetic.
// Bounds per weight dtype (observed maxima, printed with MLXCEL_TEST_VERBOSE=1, are ~2-3e-7, and 7e-7 for
// 8-bit on the VNNI path with an outlier in x):
//   f32, f16, bf16 weights: 2e-6 (FLOAT_BOUND)     MLX affine, any bits / group / scale dtype: 4e-6 (QUANT_BOUND)
// A single wrong element gives ~1/K (>= 1e-3 here) and a 16-bit rounding of x ~3e-5, far above them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';
import {
  checkMatmul, dequantRef, encodeFloats, decodeFloat, nativeQ, quantMagnitude, randF32, randomQ, VARIANTS, type ScaleDtype,
} from './helpers.js';

const FLOAT_BOUND = 2e-6;
const QUANT_BOUND = 4e-6;
const SCALE_NAMES = ['f32', 'f16', 'bf16'] as const;
const initialIsa = native.cpuInfo().isa;
afterAll(() => native.setIsa(initialIsa));

interface FloatW {
  nw: native.NativeWeight;
  ref: Float64Array;
}
function floatWeight(N: number, K: number, dtype: 0 | 1 | 2, seed: number): FloatW {
  const v = randF32(N * K, seed, -1, 1);
  const data = encodeFloats(v, dtype);
  const ref = new Float64Array(N * K);
  for (let i = 0; i < N * K; i++) ref[i] = decodeFloat(data, dtype, i);
  // Offset by one element inside a larger buffer: kernels must accept unaligned weight views.
  const esz = dtype === 0 ? 4 : 2;
  const padded = new Uint8Array(data.byteLength + esz);
  padded.set(data, esz);
  return { nw: { dtype, data: padded.subarray(esz), rows: N, cols: K }, ref };
}

function run(x: Float32Array, M: number, w: native.NativeWeight, bias: Float32Array | null): Float32Array {
  const y = new Float32Array(M * w.rows).fill(NaN);
  native.matmul(x, M, w, bias, y);
  return y;
}

// M: GEMV sizes 1..4 (and 5..16 = 4-row blocks plus a remainder), GEMM from 17 up.
const SMALL_M = [1, 2, 3, 4, 5, 8, 13, 16, 17];
const worst = new Map<string, number>();
const note = (key: string, e: number) => worst.set(key, Math.max(worst.get(key) ?? 0, e));

for (const isa of VARIANTS) {
  describe(`matmul [${isa}]`, () => {
    beforeAll(() => {
      native.setIsa(isa);
    });

    for (const [dt, name] of [[0, 'f32'], [1, 'f16'], [2, 'bf16']] as const) {
      it(`${name} weights: odd N and K (not multiples of the SIMD width), M = ${SMALL_M.join(', ')}, with and without bias`, () => {
        expect(native.cpuInfo().isa).toBe(isa);
        // K: below one vector, between, odd, and larger than any unrolled block.
        for (const [N, K] of [[1, 1], [7, 3], [37, 33], [19, 97], [64, 256], [33, 1000]] as const) {
          const w = floatWeight(N, K, dt, N * 1000 + K);
          const bias = randF32(N, K + 7);
          for (const M of SMALL_M) {
            const x = randF32(M * K, M * 31 + K, -2, 2);
            for (const b of [null, bias]) {
              const y = run(x, M, w.nw, b);
              note(`${isa} ${name}`, checkMatmul(y, x, M, K, w.ref, N, b, FLOAT_BOUND, `${isa} ${name} M=${M} N=${N} K=${K} bias=${!!b}`));
            }
          }
        }
      });

      it(`${name} weights: large-M GEMM path (M = 17, 64, 300)`, () => {
        const N = 45, K = 130;
        const w = floatWeight(N, K, dt, 99);
        for (const M of [17, 64, 300]) {
          const x = randF32(M * K, M);
          const bias = randF32(N, 5);
          const y = run(x, M, w.nw, bias);
          note(`${isa} ${name}`, checkMatmul(y, x, M, K, w.ref, N, bias, FLOAT_BOUND, `${isa} ${name} M=${M}`));
        }
      });
    }

    for (const bits of [2, 3, 4, 5, 6, 8]) {
      it(`MLX affine ${bits}-bit: groups 32/64/128 x scales f32/f16/bf16 (random signs), K = 3 groups and 640`, () => {
        for (const group of [32, 64, 128]) {
          for (const sd of [0, 1, 2] as ScaleDtype[]) {
            // K = 3 * group (odd group count; for 4/8-bit K % 128 != 0 exercises the non-VNNI fallback)
            // and K = 640 (more than 16 groups at G = 32: a full block plus a masked remainder).
            for (const K of [3 * group, 640]) {
              const N = 37;
              const q = randomQ(N, K, bits, group, sd, bits * 100 + group + sd * 7 + K);
              const W = dequantRef(q), mag = quantMagnitude(q);
              const bias = randF32(N, K);
              for (const M of [1, 2, 3, 5, 17]) {
                const x = randF32(M * K, M * 13 + bits, -2, 2);
                const y = run(x, M, nativeQ(q), M === 2 ? bias : null);
                const label = `${isa} q${bits} g${group} scales ${SCALE_NAMES[sd]} M=${M} K=${K}`;
                note(`${isa} q${bits}`, checkMatmul(y, x, M, K, W, N, M === 2 ? bias : null, QUANT_BOUND, label, mag));
              }
            }
          }
        }
      });
    }

    it('long rows (x too large for L1: the multi-row GEMV tiles): float and 2/4/8-bit weights, M = 1..5', () => {
      // K = 5632: f32 x (22 KB) and the VNNI digit planes (16.5 KB) exceed the one-row-at-a-time limit,
      // so rows go through R-row tiles plus single-row remainders (N = 37).
      const N = 37, K = 5632;
      for (const dt of [0, 1, 2] as const) {
        const w = floatWeight(N, K, dt, 5 + dt);
        for (const M of [1, 2, 3, 4, 5]) {
          const x = randF32(M * K, M + 50 * dt, -2, 2);
          note(`${isa} ${['f32', 'f16', 'bf16'][dt]}`, checkMatmul(run(x, M, w.nw, null), x, M, K, w.ref, N, null, FLOAT_BOUND, `${isa} dtype ${dt} M=${M} K=${K}`));
        }
      }
      for (const bits of [2, 4, 8])
        for (const [group, sd] of [[32, 1], [64, 2], [128, 0]] as [number, ScaleDtype][]) {
          const q = randomQ(N, K, bits, group, sd, bits * 7 + group);
          const W = dequantRef(q), mag = quantMagnitude(q);
          for (const M of [1, 2, 3, 5]) {
            const x = randF32(M * K, M + bits, -2, 2);
            const bias = randF32(N, M);
            const label = `${isa} q${bits} g${group} sd${sd} M=${M} K=${K}`;
            note(`${isa} q${bits}`, checkMatmul(run(x, M, nativeQ(q), bias), x, M, K, W, N, bias, QUANT_BOUND, label, mag));
          }
        }
    });

    it('MLX affine 4-bit and 8-bit: large-M GEMM path (M = 17, 64, 300), bf16 scales', () => {
      for (const bits of [4, 8]) {
        const N = 29, K = 256;
        const q = randomQ(N, K, bits, 64, 2, bits);
        const W = dequantRef(q), mag = quantMagnitude(q);
        for (const M of [17, 64, 300]) {
          const x = randF32(M * K, M + bits);
          const bias = randF32(N, 3);
          const y = run(x, M, nativeQ(q), bias);
          note(`${isa} q${bits}`, checkMatmul(y, x, M, K, W, N, bias, QUANT_BOUND, `${isa} q${bits} M=${M}`, mag));
        }
      }
    });

    it('quantized GEMV stays exact-to-f32 with outliers, tiny and zero groups in x', () => {
      // Activations of real models have a few channels 100x larger than the rest; the integer dot-product
      // path splits x per group, so a group holding an outlier, an all-zero group and a group of
      // denormal-sized values are the cases that would expose a lossy split.
      const N = 16, K = 512;
      for (const bits of [4, 8]) {
        const q = randomQ(N, K, bits, 64, 2, 7 + bits);
        const W = dequantRef(q), mag = quantMagnitude(q);
        const x = randF32(K, 3, -1, 1);
        x[5] = 300;
        x[77] = -250;
        for (let i = 128; i < 192; i++) x[i] = 0;
        for (let i = 192; i < 256; i++) x[i] *= 1e-30;
        const y = run(x, 1, nativeQ(q), null);
        note(`${isa} q${bits}`, checkMatmul(y, x, 1, K, W, N, null, QUANT_BOUND, `${isa} q${bits} outliers`, mag));
      }
    });

    it('non-finite activations propagate (inf, NaN) instead of being clamped', () => {
      const N = 4, K = 256;
      for (const bits of [4, 8]) {
        const q = randomQ(N, K, bits, 64, 0, bits);
        const x = randF32(K, 1);
        x[10] = NaN;
        expect(Array.from(run(x, 1, nativeQ(q), null)).every(Number.isNaN)).toBe(true);
      }
      const w = floatWeight(N, K, 2, 1);
      const x = randF32(K, 2);
      x[3] = Infinity;
      const y = run(x, 1, w.nw, null);
      for (let n = 0; n < N; n++) expect(Number.isFinite(y[n]!)).toBe(false);
    });

    it('gather: rows of f32/f16/bf16 and every quantized layout equal the stored values', () => {
      const ids = Int32Array.from([0, 5, 5, 12, 1, 12, 0]);
      for (const dt of [0, 1, 2] as const) {
        const N = 13, K = 37;
        const w = floatWeight(N, K, dt, 4);
        const out = new Float32Array(ids.length * K);
        native.gather(ids, w.nw, out);
        for (let i = 0; i < ids.length; i++)
          for (let c = 0; c < K; c++) expect(out[i * K + c]).toBe(Math.fround(w.ref[ids[i]! * K + c]!));
      }
      for (const bits of [2, 3, 4, 5, 6, 8])
        for (const group of [32, 64, 128])
          for (const sd of [0, 1, 2] as ScaleDtype[]) {
            const N = 13, K = 2 * group;
            const q = randomQ(N, K, bits, group, sd, bits + group + sd);
            const W = dequantRef(q);
            const out = new Float32Array(ids.length * K);
            native.gather(ids, nativeQ(q), out);
            for (let i = 0; i < ids.length; i++)
              for (let c = 0; c < K; c++) {
                const r = ids[i]!, g = r * (K / group) + Math.floor(c / group);
                const s = decodeFloat(q.scales, sd, g), b = decodeFloat(q.biases, sd, g);
                // s * q + b with at most one f32 rounding per operation.
                const tol = 2 ** -22 * (Math.abs(W[r * K + c]! - b) + Math.abs(b));
                const d = Math.abs(out[i * K + c]! - W[r * K + c]!);
                if (!(d <= tol)) throw new Error(`${isa} gather q${bits} g${group} sd${sd} row ${r} col ${c}: ${out[i * K + c]} vs ${W[r * K + c]} (s=${s})`);
              }
          }
    });
  });
}

describe('matmul: results do not depend on the thread count', () => {
  it('GEMV and GEMM give bitwise identical output on 1 and 2+ threads', () => {
    const before = native.cpuInfo().threads;
    try {
      const outs: Float32Array[][] = [];
      for (const t of [1, Math.max(2, before)]) {
        native.setThreads(t);
        const o: Float32Array[] = [];
        for (const K of [512, 5632]) {
          // 301 rows: a multiple of no tile height, so chunk boundaries fall inside tiles.
          const q = randomQ(301, K, 4, 64, 2, 1);
          const q8 = randomQ(301, K, 8, 32, 1, 2);
          const w = floatWeight(301, K, 2, 2);
          for (const M of [1, 3, 40]) {
            const x = randF32(M * K, M);
            o.push(run(x, M, nativeQ(q), null), run(x, M, nativeQ(q8), null), run(x, M, w.nw, null));
          }
        }
        outs.push(o);
      }
      for (let i = 0; i < outs[0]!.length; i++) expect(Buffer.from(outs[1]![i]!.buffer).equals(Buffer.from(outs[0]![i]!.buffer))).toBe(true);
    } finally {
      native.setThreads(before);
    }
  });
});

afterAll(() => {
  // The observed worst normalised errors, for the record (see the bounds at the top).
  if (process.env.MLXCEL_TEST_VERBOSE) for (const [k, v] of worst) console.log(`${k}: ${v.toExponential(2)}`);
});
