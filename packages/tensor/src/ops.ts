/**
 * The op API over core-native. Activations are row-major f32 `Float32Array`s with explicit sizes;
 * every op allocates its output unless an `out` is given. Heavy work runs in the native thread pool.
 */
import * as native from '@mlxcel/core-native';
import { BinaryOp, UnaryOp } from '@mlxcel/core-native';
import { outputFloats } from './buffers.js';
import { MlxcelError } from './errors.js';
import type { Weight } from './weight.js';

function check(cond: boolean, msg: string): void {
  if (!cond) throw new MlxcelError('E_SHAPE', msg);
}

/** y[M, N] = x[M, K] . W^T (+ bias). K = w.cols, N = w.rows. */
export function matmul(x: Float32Array, M: number, w: Weight, bias?: Float32Array | null, out?: Float32Array): Float32Array {
  check(x.length >= M * w.cols, `matmul: x has ${x.length} values, expected ${M} x ${w.cols}`);
  const y = out ?? outputFloats(M * w.rows);
  native.matmul(x, M, w.native, bias ?? null, y);
  return y;
}

/**
 * `outs[j] = x[M, K] . W_j^T (+ bias_j)` for 1 to 8 weights that share x (the same K = cols): a layer's
 * q / k / v or gate / up projections. Every output holds exactly what `matmul` alone gives; in decode
 * (M <= 16) over resident 4-bit weights it is one pass over all their rows instead of one per weight
 * (x prepared once, one parallel region: core-native `matmulShared`).
 */
export function matmulShared(x: Float32Array, M: number, ws: readonly { weight: Weight; bias: Float32Array | null }[], outs?: readonly (Float32Array | undefined)[]): Float32Array[] {
  check(ws.length > 0, 'matmulShared: no weights');
  const K = ws[0]!.weight.cols;
  for (const { weight } of ws) check(weight.cols === K, `matmulShared: weights of ${weight.cols} and ${K} columns cannot share x`);
  check(x.length >= M * K, `matmulShared: x has ${x.length} values, expected ${M} x ${K}`);
  const ys = ws.map(({ weight }, j) => outs?.[j] ?? outputFloats(M * weight.rows));
  native.matmulShared(x, M, ws.map((l) => l.weight.native), ws.map((l) => l.bias), ys);
  return ys;
}

/** Rows of an embedding-like weight (any dtype, quantized included) as f32 [n, cols]. */
export function gather(ids: Int32Array, w: Weight, out?: Float32Array): Float32Array {
  const y = out ?? outputFloats(ids.length * w.cols);
  native.gather(ids, w.native, y);
  return y;
}

export function rmsNorm(x: Float32Array, dim: number, weight: Float32Array | null, eps: number, plusOne = false, out?: Float32Array): Float32Array {
  check(x.length % dim === 0, `rmsNorm: length ${x.length} is not a multiple of dim ${dim}`);
  const y = out ?? outputFloats(x.length);
  native.rmsNorm(x, x.length / dim, dim, weight, eps, plusOne, y);
  return y;
}

export function layerNorm(x: Float32Array, dim: number, weight: Float32Array | null, bias: Float32Array | null, eps: number, out?: Float32Array): Float32Array {
  check(x.length % dim === 0, `layerNorm: length ${x.length} is not a multiple of dim ${dim}`);
  const y = out ?? outputFloats(x.length);
  native.layerNorm(x, x.length / dim, dim, weight, bias, eps, y);
  return y;
}

export function softmax(x: Float32Array, dim: number, out?: Float32Array): Float32Array {
  check(x.length % dim === 0, `softmax: length ${x.length} is not a multiple of dim ${dim}`);
  const y = out ?? outputFloats(x.length);
  native.softmax(x, x.length / dim, dim, y);
  return y;
}

function un(op: number) {
  return (x: Float32Array, out?: Float32Array): Float32Array => {
    const y = out ?? outputFloats(x.length);
    native.unary(op, x, y);
    return y;
  };
}
export const silu = un(UnaryOp.SILU);
export const geluTanh = un(UnaryOp.GELU_TANH);
export const geluErf = un(UnaryOp.GELU_ERF);
export const relu = un(UnaryOp.RELU);
export const tanh = un(UnaryOp.TANH);
export const exp = un(UnaryOp.EXP);
export const sigmoid = un(UnaryOp.SIGMOID);
export const square = un(UnaryOp.SQUARE);
export const sqrt = un(UnaryOp.SQRT);

function bin(op: number) {
  /** a op b, with b broadcast over a's leading axes when b is shorter (its length must divide a's). */
  return (a: Float32Array, b: Float32Array, out?: Float32Array): Float32Array => {
    const y = out ?? outputFloats(a.length);
    native.binary(op, a, b, y);
    return y;
  };
}
export const add = bin(BinaryOp.ADD);
export const sub = bin(BinaryOp.SUB);
export const mul = bin(BinaryOp.MUL);
export const div = bin(BinaryOp.DIV);
export const maximum = bin(BinaryOp.MAX);

/** x * s + t */
export function scale(x: Float32Array, s: number, t = 0, out?: Float32Array): Float32Array {
  const y = out ?? outputFloats(x.length);
  native.affine(x, s, t, y);
  return y;
}

/**
 * out = Σ_j coefs[j] · inputs[j], element-wise over out's length (default: the first input's). `out`
 * may be one of the inputs. Mixes of a few same-shaped arrays (Gemma 3n's AltUp streams) in one native
 * pass instead of a JS loop per pair.
 */
export function linearCombine(inputs: readonly Float32Array[], coefs: ArrayLike<number>, out?: Float32Array): Float32Array {
  check(inputs.length > 0 && coefs.length === inputs.length, `linearCombine: ${inputs.length} inputs and ${coefs.length} coefficients`);
  const y = out ?? outputFloats(inputs[0]!.length);
  native.linearCombine(inputs, coefs instanceof Float32Array ? coefs : Float32Array.from(coefs), y);
  return y;
}

/** Index of the maximum of each row (first one on ties). */
/**
 * Per-row mixes of K streams in one native pass: outs[i][t, :] = Σ_j coefs[t, i, j] · inputs[j][t, :]
 * over `rows` rows of `width`, coefs [rows, outs.length, inputs.length]. Outputs may be inputs; a
 * coefficient of exactly 0 drops its term. Gemma 3n's AltUp predict and correct.
 */
export function mixStreams(inputs: readonly Float32Array[], coefs: Float32Array, outs: readonly Float32Array[], rows: number, width: number): void {
  check(coefs.length >= rows * outs.length * inputs.length, `mixStreams: ${coefs.length} coefficients, expected [${rows}, ${outs.length}, ${inputs.length}]`);
  native.mixStreams(inputs, coefs, outs, rows, width);
}

/**
 * out = cap · tanh(x / cap) (cap null or 0: a copy) and the NaN/Inf check in one native pass; returns the
 * index of the first non-finite element of x (left unchanged in out), or -1.
 */
export function softcapCheck(x: Float32Array, cap: number | null, out: Float32Array = x): number {
  return native.softcapCheck(x, cap ?? 0, out);
}

/** gu [M, 2I] = [gate | up] → [M, I] = act(gate) · up (act: 'silu' or 'gelu_tanh'), one native pass. */
export function gatedAct(gu: Float32Array, M: number, I: number, act: 'silu' | 'gelu_tanh', out?: Float32Array): Float32Array {
  check(gu.length >= M * 2 * I, `gatedAct: ${gu.length} values, expected ${M} x ${2 * I}`);
  const y = out ?? outputFloats(M * I);
  native.gatedAct(gu, M, I, act === 'silu' ? UnaryOp.SILU : UnaryOp.GELU_TANH, y);
  return y;
}

/** In place over rows of width dim: x ← max(x − (mean + std · z), 0), population std (Gemma 3n activation sparsity). */
export function gaussianTopK(x: Float32Array, dim: number, z: number): Float32Array {
  check(x.length % dim === 0, `gaussianTopK: length ${x.length} is not a multiple of dim ${dim}`);
  native.gaussianTopK(x, x.length / dim, dim, z);
  return x;
}

export function argmax(x: Float32Array, dim: number): Int32Array {
  const rows = x.length / dim;
  const out = new Int32Array(rows);
  native.argmax(x, rows, dim, out);
  return out;
}

/** The k largest values of one row, descending, with their indices. */
export function topk(x: Float32Array, k: number): { indices: Int32Array; values: Float32Array } {
  const indices = new Int32Array(k), values = new Float32Array(k);
  native.topk(x, k, indices, values);
  return { indices, values };
}

/** Columns [c0, c1) of a row-major [rows, cols] matrix, as a new [rows, c1 - c0] matrix. */
export function sliceCols(x: Float32Array, cols: number, c0: number, c1: number): Float32Array {
  const rows = x.length / cols, w = c1 - c0;
  const out = outputFloats(rows * w);
  for (let r = 0; r < rows; r++) out.set(x.subarray(r * cols + c0, r * cols + c1), r * w);
  return out;
}

/** Concatenates row-major matrices with the same row count along columns. */
export function concatCols(parts: { data: Float32Array; cols: number }[]): Float32Array {
  const rows = parts[0]!.data.length / parts[0]!.cols;
  const total = parts.reduce((s, p) => s + p.cols, 0);
  const out = outputFloats(rows * total);
  for (let r = 0; r < rows; r++) {
    let c = 0;
    for (const p of parts) {
      out.set(p.data.subarray(r * p.cols, (r + 1) * p.cols), r * total + c);
      c += p.cols;
    }
  }
  return out;
}
