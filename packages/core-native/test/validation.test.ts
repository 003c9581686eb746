// Every entry point validates its arguments and throws a JS error (TypeError for a wrong kind of value,
// RangeError for a wrong size or value) naming the function and argument, instead of crashing the
// process. A crash would kill this test's worker, so "throws" here also proves "did not crash".
import { describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';

const f32 = (n: number) => new Float32Array(n);
const w44: native.NativeWeight = { dtype: 0, data: f32(16), rows: 4, cols: 4 };
const q: native.NativeWeight = {
  dtype: 3, data: new Uint32Array(4 * 8), rows: 4, cols: 64, scales: f32(4), biases: f32(4), scaleDtype: 0, bits: 4, groupSize: 64,
};

type Case = [string, () => unknown, RegExp];
const expectThrows = (cases: Case[]) => {
  for (const [what, fn, msg] of cases) {
    let err: unknown;
    try {
      fn();
    } catch (e) {
      err = e;
    }
    if (!(err instanceof Error)) throw new Error(`${what}: did not throw`);
    expect(err.message, what).toMatch(msg);
  }
};

describe('argument validation', () => {
  it('matmul: x / out sizes, weight descriptor fields, bias, types', () => {
    expectThrows([
      ['x not a Float32Array', () => native.matmul(new Float64Array(4) as unknown as Float32Array, 1, w44, null, f32(4)), /matmul: x must be a Float32Array/],
      ['x too short', () => native.matmul(f32(3), 1, w44, null, f32(4)), /matmul: x has 3 elements, needs 4/],
      ['out too short', () => native.matmul(f32(8), 2, w44, null, f32(7)), /matmul: out has 7 elements, needs 8/],
      ['M not an integer', () => native.matmul(f32(4), 1.5, w44, null, f32(4)), /matmul: M must be an integer/],
      ['M negative', () => native.matmul(f32(4), -1, w44, null, f32(4)), /matmul: M = -1 is outside/],
      ['weight missing', () => native.matmul(f32(4), 1, undefined as unknown as native.NativeWeight, null, f32(4)), /matmul: weight must be a weight descriptor/],
      ['bad dtype', () => native.matmul(f32(4), 1, { ...w44, dtype: 9 as 0 }, null, f32(4)), /weight\.dtype = 9 is outside/],
      ['data too small', () => native.matmul(f32(4), 1, { ...w44, data: f32(15) }, null, f32(4)), /weight\.data has 60 bytes, needs 64/],
      ['bf16 data too small', () => native.matmul(f32(4), 1, { ...w44, dtype: 2, data: new Uint16Array(15) }, null, f32(4)), /needs 32/],
      ['data not a buffer', () => native.matmul(f32(4), 1, { ...w44, data: [1, 2] as unknown as Float32Array }, null, f32(4)), /weight\.data must be a TypedArray/],
      ['bias too short', () => native.matmul(f32(4), 1, w44, f32(3), f32(4)), /matmul: bias has 3 elements, needs 4/],
      ['bias wrong type', () => native.matmul(f32(4), 1, w44, new Int32Array(4) as unknown as Float32Array, f32(4)), /bias must be a Float32Array/],
      ['7 bits', () => native.matmul(f32(64), 1, { ...q, bits: 7 as 4 }, null, f32(4)), /bits = 7 is not an MLX affine width/],
      ['group 48', () => native.matmul(f32(64), 1, { ...q, groupSize: 48 as 64 }, null, f32(4)), /groupSize = 48 is not 32, 64 or 128/],
      ['cols not a multiple of group', () => native.matmul(f32(96), 1, { ...q, cols: 96 }, null, f32(4)), /cols 96 is not a multiple of groupSize 64/],
      ['packed too small', () => native.matmul(f32(64), 1, { ...q, data: new Uint32Array(31) }, null, f32(4)), /weight\.data has 124 bytes, needs 128/],
      ['scales too small', () => native.matmul(f32(64), 1, { ...q, scales: f32(3) }, null, f32(4)), /weight\.scales has 12 bytes, needs 16/],
      ['biases missing', () => native.matmul(f32(64), 1, { ...q, biases: undefined }, null, f32(4)), /weight\.biases must be a TypedArray/],
      ['scaleDtype missing', () => native.matmul(f32(64), 1, { ...q, scaleDtype: undefined }, null, f32(4)), /weight\.scaleDtype must be a number/],
      ['M x K overflow', () => native.matmul(f32(4), 2 ** 32, { dtype: 0, data: f32(0), rows: 0, cols: 2 ** 31 }, null, f32(4)), /matmul: sizes 4294967296 x 2147483648 x 1 are too large/],
    ]);
  });

  it('gather: ids type and range, out size, overflowing table sizes', () => {
    expectThrows([
      ['ids not Int32Array', () => native.gather(new Uint32Array(1) as unknown as Int32Array, w44, f32(4)), /gather: ids must be an Int32Array/],
      ['id out of range', () => native.gather(Int32Array.from([0, 4]), w44, f32(8)), /gather: ids\[1\] = 4 is outside the table's 4 rows/],
      ['negative id', () => native.gather(Int32Array.from([-1]), w44, f32(4)), /ids\[0\] = -1/],
      ['out too short', () => native.gather(Int32Array.from([1, 2]), w44, f32(7)), /gather: out has 7 elements, needs 8/],
      // rows * cols would wrap around 2^64 without the overflow check, passing an empty buffer.
      ['rows x cols overflow', () => native.gather(Int32Array.from([1000]), { dtype: 0, data: f32(0), rows: 2 ** 40, cols: 2 ** 24 }, f32(16)), /too large/],
    ]);
  });

  it('norms and softmax: rows x dim against buffer sizes, weights, eps, flags', () => {
    expectThrows([
      ['rmsNorm x short', () => native.rmsNorm(f32(7), 2, 4, null, 1e-5, false, f32(8)), /rmsNorm: x has 7 elements, needs 8/],
      ['rmsNorm weight short', () => native.rmsNorm(f32(8), 2, 4, f32(3), 1e-5, false, f32(8)), /rmsNorm: weight has 3 elements, needs 4/],
      ['rmsNorm dim 0', () => native.rmsNorm(f32(8), 2, 0, null, 1e-5, false, f32(8)), /rmsNorm: dim = 0 is outside/],
      ['rmsNorm eps not a number', () => native.rmsNorm(f32(8), 2, 4, null, '1e-5' as unknown as number, false, f32(8)), /rmsNorm: eps must be a number/],
      ['rmsNorm plusOne not boolean', () => native.rmsNorm(f32(8), 2, 4, null, 1e-5, 1 as unknown as boolean, f32(8)), /plusOne must be a boolean/],
      ['rmsNorm overflow', () => native.rmsNorm(f32(8), 2 ** 40, 2 ** 30, null, 1e-5, false, f32(8)), /too large/],
      ['layerNorm bias short', () => native.layerNorm(f32(8), 2, 4, null, f32(2), 1e-5, f32(8)), /layerNorm: bias has 2 elements, needs 4/],
      ['layerNorm out short', () => native.layerNorm(f32(8), 2, 4, null, null, 1e-5, f32(4)), /layerNorm: out has 4 elements, needs 8/],
      ['softmax x short', () => native.softmax(f32(5), 2, 3, f32(6)), /softmax: x has 5 elements, needs 6/],
      ['softmax out wrong type', () => native.softmax(f32(6), 2, 3, new Float64Array(6) as unknown as Float32Array), /softmax: out must be a Float32Array/],
    ]);
  });

  it('unary, binary, affine: ops, broadcast shapes, output sizes', () => {
    expectThrows([
      ['unary bad op', () => native.unary(99, f32(4), f32(4)), /unary: op = 99 is outside/],
      ['unary out short', () => native.unary(0, f32(4), f32(3)), /unary: out has 3 elements, needs 4/],
      ['unary x wrong type', () => native.unary(0, [1, 2] as unknown as Float32Array, f32(2)), /unary: x must be a Float32Array/],
      ['binary bad op', () => native.binary(-1, f32(4), f32(4), f32(4)), /binary: op = -1 is outside/],
      ['binary non-dividing broadcast', () => native.binary(0, f32(10), f32(3), f32(10)), /binary: b has 3 elements, which does not divide a's 10/],
      ['binary empty b', () => native.binary(0, f32(10), f32(0), f32(10)), /does not divide/],
      ['binary out short', () => native.binary(0, f32(10), f32(5), f32(9)), /binary: out has 9 elements, needs 10/],
      ['affine s not a number', () => native.affine(f32(4), null as unknown as number, 0, f32(4)), /affine: s must be a number/],
      ['affine out short', () => native.affine(f32(4), 1, 0, f32(2)), /affine: out has 2 elements, needs 4/],
      ['linearCombine inputs not an array', () => native.linearCombine(f32(4) as unknown as Float32Array[], f32(1), f32(4)), /linearCombine: inputs must be an array/],
      ['linearCombine no inputs', () => native.linearCombine([], f32(0), f32(4)), /linearCombine: inputs has 0 arrays, needs 1\.\.64/],
      ['linearCombine too many inputs', () => native.linearCombine(Array.from({ length: 65 }, () => f32(4)), f32(65), f32(4)), /inputs has 65 arrays/],
      ['linearCombine input short', () => native.linearCombine([f32(4), f32(3)], f32(2), f32(4)), /linearCombine: inputs\[1\] has 3 elements, needs 4/],
      ['linearCombine input not f32', () => native.linearCombine([f32(4), new Float64Array(4) as unknown as Float32Array], f32(2), f32(4)), /linearCombine: inputs\[1\] must be a Float32Array/],
      ['linearCombine coefs short', () => native.linearCombine([f32(4), f32(4)], f32(1), f32(4)), /linearCombine: coefs has 1 elements, needs 2/],
    ]);
  });

  it('rope: positions against the table, rotDim, table shapes', () => {
    const cos = f32(8 * 4), sin = f32(8 * 4); // 8 positions x rotDim 8
    expectThrows([
      ['position past table', () => native.rope(f32(16), 1, 2, 8, Int32Array.from([8]), cos, sin, 8, false), /rope: positions\[0\] = 8 is outside the table's 8 rows/],
      ['negative position', () => native.rope(f32(16), 1, 2, 8, Int32Array.from([-1]), cos, sin, 8, false), /positions\[0\] = -1/],
      ['odd rotDim', () => native.rope(f32(16), 1, 2, 8, Int32Array.from([0]), cos, sin, 7, false), /rope: rotDim must be even/],
      ['rotDim > headDim', () => native.rope(f32(16), 1, 2, 8, Int32Array.from([0]), cos, sin, 10, false), /rope: rotDim = 10 is outside/],
      ['tables differ', () => native.rope(f32(16), 1, 2, 8, Int32Array.from([0]), cos, f32(31), 8, false), /cosTab and sinTab differ/],
      ['table not a multiple of rotDim/2', () => native.rope(f32(16), 1, 2, 8, Int32Array.from([0]), f32(30), f32(30), 8, false), /not a multiple of rotDim\/2/],
      ['x short', () => native.rope(f32(15), 1, 2, 8, Int32Array.from([0]), cos, sin, 8, false), /rope: x has 15 elements, needs 16/],
      ['positions short', () => native.rope(f32(32), 2, 2, 8, Int32Array.from([0]), cos, sin, 8, false), /rope: positions has 1 elements, needs 2/],
    ]);
  });

  it('conversion, quantize, argmax, topk, streamSum', () => {
    expectThrows([
      ['toF32 src short', () => native.toF32(new Uint16Array(3), 1, 4, f32(4)), /toF32: src has 6 bytes, needs 8/],
      ['toF32 bad dtype', () => native.toF32(new Uint16Array(4), 3 as 1, 4, f32(4)), /toF32: srcDtype = 3 is outside/],
      ['toF32 out short', () => native.toF32(new Uint16Array(4), 2, 4, f32(3)), /toF32: out has 3 elements, needs 4/],
      ['fromF32 dtype f32', () => native.fromF32(f32(4), 0 as 1, new Uint16Array(4)), /fromF32: dstDtype = 0 is outside/],
      ['fromF32 out short', () => native.fromF32(f32(4), 2, new Uint16Array(3)), /fromF32: out is too small/],
      ['quantize 7 bits', () => native.quantize(f32(64), 1, 64, 7, 64, new Uint32Array(14), f32(1), f32(1)), /quantize: bits must be 2, 3, 4, 5, 6 or 8/],
      ['quantize group 16', () => native.quantize(f32(64), 1, 64, 4, 16, new Uint32Array(8), f32(4), f32(4)), /quantize: group = 16 is outside/],
      ['quantize cols % group', () => native.quantize(f32(96), 1, 96, 4, 64, new Uint32Array(12), f32(2), f32(2)), /quantize: cols 96 is not a multiple of group 64/],
      ['quantize words short', () => native.quantize(f32(64), 1, 64, 4, 64, new Uint32Array(7), f32(1), f32(1)), /quantize: outWords is too small/],
      ['quantize scales short', () => native.quantize(f32(128), 2, 64, 4, 64, new Uint32Array(16), f32(1), f32(2)), /quantize: outScales has 1 elements, needs 2/],
      ['argmax out short', () => native.argmax(f32(8), 2, 4, new Int32Array(1)), /argmax: out has 1 elements, needs 2/],
      ['argmax out wrong type', () => native.argmax(f32(8), 2, 4, f32(2) as unknown as Int32Array), /argmax: out must be an Int32Array/],
      ['topk k > length', () => native.topk(f32(4), 5, new Int32Array(5), f32(5)), /topk: k = 5 is outside \[1, 4\]/],
      ['topk k = 0', () => native.topk(f32(4), 0, new Int32Array(1), f32(1)), /topk: k = 0 is outside/],
      ['topk outVal short', () => native.topk(f32(4), 2, new Int32Array(2), f32(1)), /topk: outVal has 1 elements, needs 2/],
      ['streamSum not a buffer', () => native.streamSum('abc' as unknown as ArrayBuffer), /streamSum: buffer must be a TypedArray/],
    ]);
  });

  it('alloc, mmapFile, setIsa, setThreads', () => {
    expectThrows([
      ['alloc negative', () => native.alloc(-1), /alloc: bytes = -1 is outside/],
      ['alloc fractional', () => native.alloc(1.5), /alloc: bytes must be an integer/],
      ['mmapFile not a string', () => native.mmapFile(42 as unknown as string), /mmapFile: path must be a string/],
      ['mmapFile a directory', () => native.mmapFile('/'), /mmapFile: .*'\/'/],
      ['setIsa unknown', () => native.setIsa('sse9'), /setIsa: ISA variant 'sse9' is not available on this CPU\/build \(available: scalar/],
      ['setIsa not a string', () => native.setIsa(3 as unknown as string), /setIsa: name must be a string/],
      ['setThreads 0', () => native.setThreads(0), /setThreads: n = 0 is outside \[1, 1024\]/],
    ]);
  });

  it('after all of the above the addon still computes correctly', () => {
    const y = f32(4);
    native.matmul(Float32Array.from([1, 2, 3, 4]), 1, { dtype: 0, data: Float32Array.from({ length: 16 }, (_, i) => i), rows: 4, cols: 4 }, null, y);
    expect(Array.from(y)).toEqual([20, 60, 100, 140]);
  });
});
