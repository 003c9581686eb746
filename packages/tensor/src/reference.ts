/**
 * Slow, obviously-correct TypeScript references of the native ops. Tests only: they define what the
 * kernels must compute. Computations use float64 accumulation.
 */
import { MlxcelError } from './errors.js';

const bf16 = (h: number): number => {
  const b = new DataView(new ArrayBuffer(4));
  b.setUint32(0, h << 16, true);
  return b.getFloat32(0, true);
};

export function f16ToF32(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Reads element i of a float buffer stored as f32 (0), f16 (1) or bf16 (2). */
export function readFloat(bytes: Uint8Array, dtype: 0 | 1 | 2, i: number): number {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dtype === 0) return dv.getFloat32(4 * i, true);
  const h = dv.getUint16(2 * i, true);
  return dtype === 1 ? f16ToF32(h) : bf16(h);
}

/** Code c of a row packed as an LSB-first bit stream of `bits`-bit codes (MLX layout). */
export function unpackCode(row: Uint8Array, bits: number, c: number): number {
  let q = 0;
  for (let k = 0; k < bits; k++) {
    const t = c * bits + k;
    q |= ((row[t >> 3]! >> (t & 7)) & 1) << k;
  }
  return q;
}

/** Dequantizes an MLX affine weight [rows, cols] independently of the native code. */
export function dequantize(
  packed: Uint8Array, scales: Uint8Array, biases: Uint8Array, scaleDtype: 0 | 1 | 2,
  rows: number, cols: number, bits: number, group: number,
): Float32Array {
  if (cols % group) throw new MlxcelError('E_QUANT', 'dequantize: cols % group != 0');
  const out = new Float32Array(rows * cols);
  const rowBytes = (cols * bits) / 8, gpr = cols / group;
  for (let r = 0; r < rows; r++) {
    const row = packed.subarray(r * rowBytes, (r + 1) * rowBytes);
    for (let c = 0; c < cols; c++) {
      const g = r * gpr + Math.floor(c / group);
      out[r * cols + c] = Math.fround(readFloat(scales, scaleDtype, g) * unpackCode(row, bits, c) + readFloat(biases, scaleDtype, g));
    }
  }
  return out;
}

/** y = x . W^T (+ bias), W given as f32 [N, K]. */
export function matmul(x: Float32Array, M: number, K: number, w: Float32Array, N: number, bias?: Float32Array | null): Float32Array {
  const y = new Float32Array(M * N);
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += x[m * K + k]! * w[n * K + k]!;
      y[m * N + n] = s + (bias ? bias[n]! : 0);
    }
  return y;
}

export function rmsNorm(x: Float32Array, dim: number, w: Float32Array | null, eps: number, plusOne = false): Float32Array {
  const y = new Float32Array(x.length);
  for (let r = 0; r < x.length / dim; r++) {
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[r * dim + i]! ** 2;
    const inv = 1 / Math.sqrt(ss / dim + eps);
    for (let i = 0; i < dim; i++) y[r * dim + i] = x[r * dim + i]! * inv * (w ? (plusOne ? 1 + w[i]! : w[i]!) : 1);
  }
  return y;
}

export function layerNorm(x: Float32Array, dim: number, w: Float32Array | null, b: Float32Array | null, eps: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let r = 0; r < x.length / dim; r++) {
    let mean = 0;
    for (let i = 0; i < dim; i++) mean += x[r * dim + i]!;
    mean /= dim;
    let v = 0;
    for (let i = 0; i < dim; i++) v += (x[r * dim + i]! - mean) ** 2;
    const inv = 1 / Math.sqrt(v / dim + eps);
    for (let i = 0; i < dim; i++) y[r * dim + i] = (x[r * dim + i]! - mean) * inv * (w ? w[i]! : 1) + (b ? b[i]! : 0);
  }
  return y;
}

export function softmax(x: Float32Array, dim: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let r = 0; r < x.length / dim; r++) {
    let m = -Infinity;
    for (let i = 0; i < dim; i++) m = Math.max(m, x[r * dim + i]!);
    let s = 0;
    for (let i = 0; i < dim; i++) s += Math.exp(x[r * dim + i]! - m);
    for (let i = 0; i < dim; i++) y[r * dim + i] = Math.exp(x[r * dim + i]! - m) / s;
  }
  return y;
}

const erf = (x: number): number => {
  // Abramowitz-Stegun 7.1.26 is too coarse for 1e-6 checks; use a series/continued fraction split.
  const ax = Math.abs(x);
  if (ax < 2.5) {
    let sum = 0, term = ax;
    for (let n = 0; n < 60; n++) {
      sum += term / (2 * n + 1);
      term *= (-ax * ax) / (n + 1);
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc continued fraction for large |x|
  let f = 0;
  for (let n = 60; n >= 1; n--) f = n / 2 / (ax + f);
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / (ax + f);
  return Math.sign(x) * (1 - erfc);
};

export const unary = {
  silu: (v: number) => v / (1 + Math.exp(-v)),
  geluTanh: (v: number) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3))),
  geluErf: (v: number) => 0.5 * v * (1 + erf(v / Math.SQRT2)),
  relu: (v: number) => Math.max(0, v),
  tanh: Math.tanh,
  exp: Math.exp,
  sigmoid: (v: number) => 1 / (1 + Math.exp(-v)),
  square: (v: number) => v * v,
  sqrt: Math.sqrt,
};

/** Naive attention for one sequence (see core-native AttentionOptions for the layout). */
export function attention(o: {
  q: Float32Array; nQ: number; nHeads: number; headDim: number; qPos: Int32Array;
  k: Float32Array; v: Float32Array; nKv: number; nKvHeads: number; kPos: Int32Array;
  scale: number; softcap?: number; causal?: boolean; window?: number; mask?: Uint8Array; maskHeads?: number;
}): Float32Array {
  const D = o.headDim, out = new Float32Array(o.nQ * o.nHeads * D), g = o.nHeads / o.nKvHeads;
  for (let i = 0; i < o.nQ; i++)
    for (let h = 0; h < o.nHeads; h++) {
      const kvh = Math.floor(h / g), sc: number[] = [], js: number[] = [];
      for (let j = 0; j < o.nKv; j++) {
        const kp = o.kPos[j]!, qp = o.qPos[i]!;
        if (kp < 0 || ((o.causal ?? true) && kp > qp) || (o.window && qp - kp >= o.window)) continue;
        if (o.mask && !o.mask[((o.maskHeads === o.nHeads ? h : 0) * o.nQ + i) * o.nKv + j]) continue;
        let s = 0;
        for (let d = 0; d < D; d++) s += o.q[(i * o.nHeads + h) * D + d]! * o.k[(j * o.nKvHeads + kvh) * D + d]!;
        s *= o.scale;
        if (o.softcap) s = o.softcap * Math.tanh(s / o.softcap);
        sc.push(s);
        js.push(j);
      }
      if (!sc.length) continue;
      const m = Math.max(...sc);
      const p = sc.map((s) => Math.exp(s - m));
      const z = p.reduce((a, b) => a + b, 0);
      for (let c = 0; c < js.length; c++)
        for (let d = 0; d < D; d++) out[(i * o.nHeads + h) * D + d] += (p[c]! / z) * o.v[(js[c]! * o.nKvHeads + kvh) * D + d]!;
    }
  return out;
}
