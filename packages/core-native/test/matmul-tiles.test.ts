// The 16-row tile layout of 4- and 8-bit weights (packWeightTiles, layout: 1; src/isa/gemv_tiles.h) on the
// variants that read it (weightTileLayout()), and its rejection everywhere else. A tiled weight is the same
// weight, so:
//   1. gather (every row reader: the exact prefill GEMM's decode too) gives the row layout's bits;
//   2. the integer-activation GEMM (M > 16, "fast" / "int8") gives the row layout's bits (the tile it
//      builds per call is the same one), and so does the exact GEMM (M > 16);
//   3. the GEMV (M <= 16) meets the definitions: the f32 bound of matmul.test.ts in "exact", the
//      integer-activation definition of matmul-q8act.test.ts in "fast" / "int8";
//   4. every row of a GEMV with M rows equals the call with that row alone, bit for bit (batched decode
//      == single), and a non-finite x row stays in its row.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';
import { checkMatmul, dequantRef, nativeQ, q8actReference, quantMagnitude, randF32, randomQ, tiled, type ScaleDtype } from './helpers.js';

const initialIsa = native.cpuInfo().isa;
afterAll(() => native.setIsa(initialIsa));
afterEach(() => {
  native.setMatmulPrecision('exact');
  native.setIsa(initialIsa);
});

function run(x: Float32Array, M: number, w: native.NativeWeight, bias: Float32Array | null, mode: native.MatmulPrecision = 'exact'): Float32Array {
  native.setMatmulPrecision(mode);
  const y = new Float32Array(M * w.rows).fill(NaN);
  native.matmul(x, M, w, bias, y);
  return y;
}

const tilesHere = native.weightTileLayout();
const SHAPES: [number, number, ScaleDtype][] = [[32, 1], [64, 2], [128, 0]].map(([g, sd]) => [g!, 0, sd as ScaleDtype]);

describe.runIf(tilesHere)(`16-row tile layout [${initialIsa}]`, () => {
  it('gather gives the row layout\'s bits (4/8-bit, groups 32/64/128, f32/f16/bf16 scales)', () => {
    for (const bits of [4, 8]) for (const [group, , sd] of SHAPES) {
      const q = randomQ(48, 384, bits, group, sd, group + sd + bits);
      const rows = nativeQ(q), t = tiled(rows);
      const ids = Int32Array.from({ length: 48 }, (_, i) => (i * 7) % 48);
      const a = new Float32Array(48 * 384), b = new Float32Array(48 * 384);
      native.gather(ids, rows, a);
      native.gather(ids, t, b);
      expect(b).toEqual(a);
    }
  });

  it('packs in place (the very same buffers) to the same bytes as into new ones', () => {
    for (const bits of [4, 8]) {
    const q = randomQ(64, 384, bits, 32, 2, 21 + bits);
    const w = nativeQ(q), out = tiled(w);
    const inPlace = { ...w, data: (w.data as Uint8Array).slice(), scales: (w.scales as Uint8Array).slice(), biases: (w.biases as Uint8Array).slice() };
    native.packWeightTiles(inPlace, inPlace as { data: Uint8Array; scales: Uint8Array; biases: Uint8Array });
    expect(inPlace.data).toEqual(out.data);
    expect(inPlace.scales).toEqual(out.scales);
    expect(inPlace.biases).toEqual(out.biases);
    expect(inPlace.data).not.toEqual(w.data);
    }
  });

  it('GEMM (M > 16): exact, fast and int8 give the row layout\'s bits (4/8-bit)', () => {
    for (const bits of [4, 8]) for (const [group, , sd] of SHAPES) {
      const N = 64, K = 512;
      const q = randomQ(N, K, bits, group, sd, 3 * group + sd + bits);
      const rows = nativeQ(q), t = tiled(rows);
      const bias = randF32(N, 5);
      for (const M of [17, 40, 130]) {
        const x = randF32(M * K, M + group, -2, 2);
        for (const mode of ['exact', 'fast', 'int8'] as const)
          expect(run(x, M, t, bias, mode), `${mode} q${bits} g${group} M=${M}`).toEqual(run(x, M, rows, bias, mode));
      }
    }
  });

  it('GEMV (M <= 16): meets the exact bound and the integer-activation definitions; rows equal single rows (4/8-bit)', () => {
    for (const bits of [4, 8]) for (const [group, , sd] of SHAPES) {
      // 80 tiles of K = 640 (five 128-code chunks): tile counts that leave remainders for every
      // tiles-per-call choice, and more than one task per thread.
      const N = 16 * 80, K = 640;
      const q = randomQ(N, K, bits, group, sd, 7 * group + sd + bits);
      const t = tiled(nativeQ(q));
      const bias = randF32(N, 9);
      const W = dequantRef(q), mag = quantMagnitude(q);
      for (const M of [1, 2, 3, 5, 8, 9, 16]) {
        const x = randF32(M * K, 100 + M, -2, 2);
        x[K - 1] = 30;  // an outlier: its group's scale must stay its own
        const exact = run(x, M, t, bias, 'exact');
        checkMatmul(exact, x, M, K, W, N, bias, 4e-6, `exact q${bits} g${group} M=${M}`, mag);
        for (const [mode, T] of [['fast', 32639], ['int8', 127]] as const) {
          const got = run(x, M, t, bias, mode);
          if (M <= 3) {  // the float64 reference is slow in JS; the row identity below covers larger M
            const { y, norm } = q8actReference(x, M, q, bias, T);
            let worst = 0;
            for (let i = 0; i < y.length; i++) worst = Math.max(worst, Math.abs(got[i]! - y[i]!) / norm[i]!);
            expect(worst, `${mode} q${bits} g${group} M=${M}`).toBeLessThanOrEqual(4e-6);
          }
          for (let m = 0; m < M; m++)
            expect(got.subarray(m * N, (m + 1) * N), `${mode} g${group} M=${M} row ${m}`).toEqual(run(x.subarray(m * K, (m + 1) * K), 1, t, bias, mode));
        }
        for (let m = 0; m < M; m++)
          expect(exact.subarray(m * N, (m + 1) * N), `exact g${group} M=${M} row ${m}`).toEqual(run(x.subarray(m * K, (m + 1) * K), 1, t, bias, 'exact'));
      }
    }
  });

  it('4-bit codes with cols not a multiple of 128 (K = 64, 192: a LAuReL projection): GEMV in the exact split in every precision, rows equal single rows; GEMM gives the row layout\'s bits', () => {
    for (const K of [64, 192]) for (const group of [32, 64]) {
      const N = 48;
      const q = randomQ(N, K, 4, group, 2, K + group);
      const rows = nativeQ(q), t = tiled(rows);
      const bias = randF32(N, 3);
      const W = dequantRef(q), mag = quantMagnitude(q);
      for (const M of [1, 3, 8, 16]) {
        const x = randF32(M * K, 200 + M, -2, 2);
        const exact = run(x, M, t, bias, 'exact');
        checkMatmul(exact, x, M, K, W, N, bias, 4e-6, `K=${K} g${group} M=${M}`, mag);
        // The integer-activation GEMV needs whole 128-code chunks: "fast" / "int8" keep the exact split here.
        for (const mode of ['fast', 'int8'] as const) expect(run(x, M, t, bias, mode), `${mode} K=${K} M=${M}`).toEqual(exact);
        for (let m = 0; m < M; m++)
          expect(exact.subarray(m * N, (m + 1) * N), `K=${K} M=${M} row ${m}`).toEqual(run(x.subarray(m * K, (m + 1) * K), 1, t, bias, 'exact'));
      }
      for (const M of [17, 40]) {
        const x = randF32(M * K, 300 + M, -2, 2);
        for (const mode of ['exact', 'fast', 'int8'] as const)
          expect(run(x, M, t, bias, mode), `GEMM ${mode} K=${K} g${group} M=${M}`).toEqual(run(x, M, rows, bias, mode));
      }
    }
  });

  it('a non-finite x row gives NaN / Inf in its own row only', () => {
    const N = 64, K = 256;
    const q = randomQ(N, K, 4, 64, 2, 77);
    const t = tiled(nativeQ(q));
    const x = randF32(3 * K, 78, -1, 1);
    x[K + 5] = NaN;
    for (const mode of ['exact', 'fast'] as const) {
      const y = run(x, 3, t, null, mode);
      expect(y.subarray(N, 2 * N).every(Number.isNaN), mode).toBe(true);
      expect(y.subarray(0, N), mode).toEqual(run(x.subarray(0, K), 1, t, null, mode));
      expect(y.subarray(2 * N), mode).toEqual(run(x.subarray(2 * K), 1, t, null, mode));
    }
  });

  it('packWeightTiles rejects what the layout cannot hold, short or overlapping outputs', () => {
    const out = (n: number, s: number) => ({ data: new Uint8Array(n), scales: new Uint8Array(s), biases: new Uint8Array(s) });
    const q2 = nativeQ(randomQ(16, 128, 2, 64, 0, 1));
    expect(() => native.packWeightTiles(q2, out(16 * 32, 16 * 2 * 4))).toThrow(/4- or 8-bit codes with cols a multiple of 64 and rows a multiple of 16 \(got 2-bit \[16, 128\]\)/);
    const q8odd = nativeQ(randomQ(16, 96, 8, 32, 0, 1));
    expect(() => native.packWeightTiles(q8odd, out(16 * 96, 16 * 3 * 4))).toThrow(/cols a multiple of 64.*8-bit \[16, 96\]/);
    const q4odd = nativeQ(randomQ(16, 96, 4, 32, 0, 1));
    expect(() => native.packWeightTiles(q4odd, out(16 * 48, 16 * 3 * 4))).toThrow(/cols a multiple of 64.*4-bit \[16, 96\]/);
    const odd = nativeQ(randomQ(20, 128, 4, 64, 0, 2));
    expect(() => native.packWeightTiles(odd, out(20 * 64, 20 * 2 * 4))).toThrow(/rows a multiple of 16/);
    const w = nativeQ(randomQ(16, 256, 4, 64, 1, 3));
    expect(() => native.packWeightTiles(w, out(16 * 128 - 1, 16 * 4 * 2))).toThrow(/out\.data has 2047 bytes, needs 2048/);
    const big = new Uint8Array(2 * 2048);
    big.set(w.data as Uint8Array);
    const shifted = { ...w, data: big.subarray(0, 2048) };
    expect(() => native.packWeightTiles(shifted, { data: big.subarray(64, 2048 + 64), scales: new Uint8Array(128), biases: new Uint8Array(128) })).toThrow(/overlaps the input/);
    expect(() => native.packWeightTiles(tiled(w), out(2048, 128))).toThrow(/row layout/);
    // A descriptor claiming the layout for a shape it cannot have.
    expect(() => native.matmul(new Float32Array(128), 1, { ...odd, layout: 1 }, null, new Float32Array(20))).toThrow(/rows a multiple of 16/);
  });

  it('other variants and the MoE kernels reject a tiled weight, naming it', () => {
    const w = tiled(nativeQ(randomQ(32, 128, 4, 64, 0, 4)));
    const other = native.cpuInfo().variants.find((v) => v !== initialIsa && !v.startsWith('avx512vnni'));
    if (other) {
      native.setIsa(other);
      expect(native.weightTileLayout()).toBe(false);
      expect(() => native.matmul(new Float32Array(128), 1, w, null, new Float32Array(32))).toThrow(new RegExp(`weight is in the 16-row tile layout, which the ${other} kernels do not read`));
      native.setIsa(initialIsa);
    }
    const x = new Float32Array(2 * 128);
    const moe = (native.default as unknown as Record<string, (o: object) => void>).moeSwitchGLU!;
    expect(() =>
      moe({ x, T: 2, numExperts: 2, k: 1, ids: new Int32Array(2), weights: new Float32Array(2).fill(1), gate: w, up: w, down: tiled(nativeQ(randomQ(256, 128, 4, 64, 0, 5))), act: 0, out: new Float32Array(2 * 128) }),
    ).toThrow(/row layout/);
  });
});

describe.runIf(!tilesHere)(`16-row tile layout not read [${initialIsa}]`, () => {
  it('matmul and gather refuse a tiled descriptor with an error naming the variant', () => {
    const w = { ...nativeQ(randomQ(32, 128, 4, 64, 0, 4)), layout: 1 as const };
    expect(() => native.matmul(new Float32Array(128), 1, w, null, new Float32Array(32))).toThrow(new RegExp(`the ${initialIsa} kernels do not read`));
    expect(() => native.gather(new Int32Array(1), w, new Float32Array(128))).toThrow(/tile layout/);
  });
});
