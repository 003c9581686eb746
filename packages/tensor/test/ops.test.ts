// The op API (thin wrappers over core-native) against the slow TS reference module, plus its own shape
// checks. The kernels themselves are checked exhaustively per ISA in packages/core-native/test.
import { describe, expect, it } from 'vitest';
import { Linear, MlxcelError, ops, QuantizedWeight, reference, Weight } from '../src/index.js';

const rand = (n: number, seed: number) => {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
};
const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number) => {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) if (!(Math.abs(a[i]! - b[i]!) <= tol)) throw new Error(`[${i}] ${a[i]} vs ${b[i]}`);
};

describe('ops vs reference', () => {
  it('matmul (float and quantized weights, with bias) and gather', () => {
    const K = 96, N = 7;
    const wf = rand(N * K, 1);
    const bias = rand(N, 2);
    for (const M of [1, 5, 12]) {
      const x = rand(M * K, M);
      close(ops.matmul(x, M, Weight.fromF32(wf, [N, K]), bias), reference.matmul(x, M, K, wf, N, bias), 1e-5);
      const q = QuantizedWeight.quantize(wf, [N, K], { bits: 5, groupSize: 32 }, 'F16');
      const deq = reference.dequantize(q.packed.bytes, q.scales.bytes, q.biases.bytes, 1, N, K, 5, 32);
      close(ops.matmul(x, M, q.weight, null), reference.matmul(x, M, K, deq, N), 1e-5);
      close(ops.gather(Int32Array.from([6, 0]), q.weight), [...deq.subarray(6 * K, 7 * K), ...deq.subarray(0, K)], 1e-6);
    }
    expect(() => ops.matmul(rand(10, 1), 1, Weight.fromF32(wf, [N, K]))).toThrow(MlxcelError);
  });

  it('matmulShared (Linear.forwardShared): each output is matmul\'s, bit for bit; mismatched widths are refused', () => {
    const K = 128, rows = [32, 16, 48];
    const ws = rows.map((n, j) => QuantizedWeight.quantize(rand(n * K, 20 + j), [n, K], { bits: 4, groupSize: 64 }, 'BF16').weight);
    const linears = ws.map((w, j) => new Linear(w, j === 1 ? rand(w.rows, 30) : null));
    for (const M of [1, 4, 20]) {
      const x = rand(M * K, 40 + M);
      const got = Linear.forwardShared(linears, x, M);
      linears.forEach((l, j) => expect(got[j], `M=${M} weight ${j}`).toEqual(l.forward(x, M)));
      // Given outputs are written in place.
      const outs = rows.map((n) => new Float32Array(M * n));
      expect(ops.matmulShared(x, M, linears, outs)[2]).toBe(outs[2]);
      expect(outs[0]).toEqual(got[0]);
    }
    const wide = new Linear(Weight.fromF32(rand(16 * 2 * K, 9), [16, 2 * K]));
    expect(() => Linear.forwardShared([linears[0]!, wide], rand(K, 1), 1)).toThrow(/weights of 256 and 128 columns cannot share x/);
    expect(() => ops.matmulShared(rand(K - 1, 1), 1, linears)).toThrow(/matmulShared: x has 127 values, expected 1 x 128/);
  });

  it('norms, softmax, unary, binary, scale, argmax, topk, sliceCols, concatCols', () => {
    const x = rand(4 * 10, 3), w = rand(10, 4), b = rand(10, 5);
    close(ops.rmsNorm(x, 10, w, 1e-6, true), reference.rmsNorm(x, 10, w, 1e-6, true), 1e-5);
    close(ops.layerNorm(x, 10, w, b, 1e-5), reference.layerNorm(x, 10, w, b, 1e-5), 1e-5);
    close(ops.softmax(x, 10), reference.softmax(x, 10), 1e-6);
    for (const name of ['silu', 'geluTanh', 'geluErf', 'relu', 'tanh', 'exp', 'sigmoid', 'square'] as const)
      close(ops[name](x), Array.from(x, reference.unary[name]), 1e-5);
    close(ops.sqrt(Float32Array.from([4, 2])), [2, Math.SQRT2], 1e-6);
    close(ops.add(x, w), Array.from(x, (v, i) => Math.fround(v + w[i % 10]!)), 0);
    close(ops.mul(x, w), Array.from(x, (v, i) => Math.fround(v * w[i % 10]!)), 0);
    close(ops.scale(x, 2, 1), Array.from(x, (v) => v * 2 + 1), 1e-6);
    close(ops.linearCombine([x, ops.scale(x, 3)], [0.5, -1]), Array.from(x, (v) => 0.5 * v - 3 * v), 1e-6);
    expect(() => ops.linearCombine([x], [1, 2])).toThrow(/linearCombine: 1 inputs and 2 coefficients/);
    expect(Array.from(ops.argmax(Float32Array.from([1, 3, 2, 9, 0, 9]), 3))).toEqual([1, 0]);
    const { indices, values } = ops.topk(Float32Array.from([0.5, 3, -1, 2]), 2);
    expect([Array.from(indices), Array.from(values)]).toEqual([[1, 3], [3, 2]]);
    const m = Float32Array.from([1, 2, 3, 4, 5, 6]);
    expect(Array.from(ops.sliceCols(m, 3, 1, 3))).toEqual([2, 3, 5, 6]);
    expect(Array.from(ops.concatCols([{ data: Float32Array.from([1, 2]), cols: 1 }, { data: Float32Array.from([3, 4, 5, 6]), cols: 2 }]))).toEqual([1, 3, 4, 2, 5, 6]);
    expect(() => ops.rmsNorm(rand(7, 1), 3, null, 1e-6)).toThrow(/rmsNorm: length 7 is not a multiple of dim 3/);
  });
});
