// matmulShared (src/bind_matmul.cc, gemv_tiles_many in src/isa/gemv_tiles.h): several weights over the
// same x. Where the kernels take the one-pass path (M <= 16, all weights tiled and alike) and where they
// do not (row layout, GEMM sizes, mixed activation widths, other variants), each output must hold
// exactly the bits of matmul alone, and bad arguments are refused naming the argument.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';
import { nativeQ, randF32, randomQ, tiled } from './helpers.js';

const initialIsa = native.cpuInfo().isa;
afterAll(() => native.setIsa(initialIsa));
afterEach(() => {
  native.setMatmulPrecision('exact');
  native.setIsa(initialIsa);
});

function separate(x: Float32Array, M: number, ws: native.NativeWeight[], bs: (Float32Array | null)[]): Float32Array[] {
  return ws.map((w, j) => {
    const y = new Float32Array(M * w.rows).fill(NaN);
    native.matmul(x, M, w, bs[j]!, y);
    return y;
  });
}

function shared(x: Float32Array, M: number, ws: native.NativeWeight[], bs: (Float32Array | null)[] | null): Float32Array[] {
  const ys = ws.map((w) => new Float32Array(M * w.rows).fill(NaN));
  native.matmulShared(x, M, ws, bs, ys);
  return ys;
}

const K = 384;
// q / k / v-like row counts (one 16-row tile, several, an uneven split) and 4- and 8-bit codes.
const ROWS = [64, 16, 48];

describe(`matmulShared [${initialIsa}]`, () => {
  it('every output equals matmul alone, bit for bit: tiled and row weights, M = 1..16 and GEMM sizes, every precision', () => {
    for (const bits of [4, 8]) {
      const rowsLayout = ROWS.map((n, j) => nativeQ(randomQ(n, K, bits, 64, 2, 10 * bits + j)));
      const layouts = native.weightTileLayout() ? [rowsLayout, rowsLayout.map(tiled)] : [rowsLayout];
      const bs = [randF32(64, 1), null, randF32(48, 2)];
      for (const ws of layouts)
        for (const mode of ['exact', 'fast', 'int8', 'balanced'] as const) {
          native.setMatmulPrecision(mode);
          for (const M of [1, 2, 5, 8, 16, 17]) {
            const x = randF32(M * K, 100 + M, -2, 2);
            x[K - 1] = 25; // an outlier in one group of row 0
            const want = separate(x, M, ws, bs);
            const got = shared(x, M, ws, bs);
            for (let j = 0; j < ws.length; j++) expect(got[j], `q${bits} layout ${ws[0]!.layout ?? 0} ${mode} M=${M} weight ${j}`).toEqual(want[j]);
          }
        }
    }
  });

  it('weights of different activation widths (an MLP input beside an attention weight under balanced) and of different code widths still give matmul\'s bits', () => {
    const a = nativeQ(randomQ(32, K, 4, 64, 2, 1)), b = { ...nativeQ(randomQ(32, K, 4, 64, 2, 2)), ffn: 'input' as const };
    const c8 = nativeQ(randomQ(16, K, 8, 64, 2, 3));
    const sets = native.weightTileLayout() ? [[a, b, c8], [tiled(a), tiled(b), tiled(c8)]] : [[a, b, c8]];
    native.setMatmulPrecision('balanced');
    for (const ws of sets)
      for (const M of [1, 8]) {
        const x = randF32(M * K, 7 + M, -1, 1);
        const want = separate(x, M, ws, [null, null, null]);
        shared(x, M, ws, null).forEach((y, j) => expect(y, `M=${M} weight ${j}`).toEqual(want[j]));
      }
  });

  it('4-bit weights of 64 columns (exact split in every precision) give matmul\'s bits too', () => {
    const ws = [2048, 64].map((n, j) => nativeQ(randomQ(n, 64, 4, 64, 2, 80 + j)));
    const set = native.weightTileLayout() ? ws.map(tiled) : ws;
    for (const mode of ['exact', 'fast', 'balanced'] as const) {
      native.setMatmulPrecision(mode);
      for (const M of [1, 8]) {
        const x = randF32(M * 64, 81 + M, -1, 1);
        const want = separate(x, M, set, [null, null]);
        shared(x, M, set, null).forEach((y, j) => expect(y, `${mode} M=${M} weight ${j}`).toEqual(want[j]));
      }
    }
  });

  it('a non-finite x row stays in its own row of every output', () => {
    const ws = ROWS.map((n, j) => nativeQ(randomQ(n, K, 4, 64, 2, 40 + j)));
    const sets = native.weightTileLayout() ? [ws, ws.map(tiled)] : [ws];
    for (const set of sets)
      for (const mode of ['exact', 'fast'] as const) {
        native.setMatmulPrecision(mode);
        const x = randF32(3 * K, 5, -1, 1);
        x[K + 9] = NaN;
        const want = separate(x, 3, set, [null, null, null]);
        const got = shared(x, 3, set, null);
        for (let j = 0; j < set.length; j++) {
          expect(got[j], `${mode} weight ${j}`).toEqual(want[j]);
          const N = set[j]!.rows;
          expect(got[j]!.subarray(N, 2 * N).every(Number.isNaN)).toBe(true);
          expect(got[j]!.subarray(0, N).every(Number.isFinite)).toBe(true);
        }
      }
  });

  it('every variant this CPU runs gives matmul\'s bits too', () => {
    const ws = ROWS.map((n, j) => nativeQ(randomQ(n, K, 4, 32, 0, 60 + j)));
    for (const isa of native.cpuInfo().variants) {
      native.setIsa(isa);
      const set = native.weightTileLayout() ? ws.map(tiled) : ws;
      for (const mode of ['exact', 'fast'] as const) {
        native.setMatmulPrecision(mode);
        const x = randF32(4 * K, 61, -1, 1);
        const want = separate(x, 4, set, [null, null, null]);
        shared(x, 4, set, null).forEach((y, j) => expect(y, `${isa} ${mode} weight ${j}`).toEqual(want[j]));
      }
    }
  });

  it('refuses bad arguments, naming them', () => {
    const w = nativeQ(randomQ(16, K, 4, 64, 2, 1)), wide = nativeQ(randomQ(16, 2 * K, 4, 64, 2, 2));
    const x = new Float32Array(2 * K), y = () => new Float32Array(2 * 16);
    expect(() => native.matmulShared(x, 2, [], null, [])).toThrow(/weights must hold 1 to 8 weights \(got 0\)/);
    expect(() => native.matmulShared(x, 2, Array(9).fill(w), null, Array.from({ length: 9 }, y))).toThrow(/1 to 8 weights \(got 9\)/);
    expect(() => native.matmulShared(x, 2, [w, wide], null, [y(), y()])).toThrow(/weights\[1\] has 768 columns, weights\[0\] 384/);
    expect(() => native.matmulShared(x, 2, [w, w], null, [y()])).toThrow(/outs must be an array with one Float32Array per weight/);
    expect(() => native.matmulShared(x, 2, [w, w], [null], [y(), y()])).toThrow(/biases must be null or an array with one bias/);
    expect(() => native.matmulShared(x, 2, [w, w], [null, new Float32Array(3)], [y(), y()])).toThrow(/biases\[1\]/);
    expect(() => native.matmulShared(x, 2, [w, w], null, [y(), new Float32Array(31)])).toThrow(/outs\[1\]/);
    expect(() => native.matmulShared(x, 2, [w, { ...w, bits: 5 }], null, [y(), y()])).toThrow(/weights\[1\]/);
    const buf = new Float32Array(64);
    expect(() => native.matmulShared(x, 2, [w, w], null, [buf.subarray(0, 32), buf.subarray(16, 48)])).toThrow(/outs\[1\] overlaps outs\[0\]/);
    const xy = new Float32Array(2 * K + 32);
    expect(() => native.matmulShared(xy.subarray(0, 2 * K), 2, [w], null, [xy.subarray(2 * K - 8, 2 * K + 24)])).toThrow(/outs\[0\] overlaps x/);
  });
});
