// Independent references for the conformance tests: written from the format descriptions
// (the project spec docs/architecture/formats.md (b), IEEE binary16, bfloat16), not from the kernels' code, and computed in
// float64 unless a step is specified as f32 arithmetic (the MLX quantizer).
import * as native from '../lib/index.js';

export const { DType } = native;
export type ScaleDtype = 0 | 1 | 2;

/** Deterministic PRNG (mulberry32) so a failure is reproducible. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n uniform floats in [lo, hi). */
export function randF32(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * r();
  return out;
}

export function randBytes(n: number, seed: number): Uint8Array {
  const r = rng(seed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 256);
  return out;
}

const f32buf = new Float32Array(1);
const u32buf = new Uint32Array(f32buf.buffer);
export function f32Bits(x: number): number {
  f32buf[0] = x;
  return u32buf[0]!;
}
export function bitsF32(u: number): number {
  u32buf[0] = u >>> 0;
  return f32buf[0]!;
}

/** IEEE binary16 -> number. */
export function f16Decode(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** number (read as f32) -> binary16, round to nearest even, overflow to inf, NaN -> quiet NaN. */
export function f16Encode(x: number): number {
  const v = Math.fround(x);
  if (Number.isNaN(v)) return 0x7e00;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  const a = Math.abs(v);
  if (a === Infinity) return sign | 0x7c00;
  // Exact search: the two neighbouring f16 magnitudes around a, picked by distance with ties to even.
  if (a >= 65520) return sign | 0x7c00; // 65520 = max f16 (65504) + half an ulp (16): ties go up to inf
  let lo = 0, hi = 0x7bff;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (f16Decode(mid) <= a) lo = mid;
    else hi = mid - 1;
  }
  const below = lo;
  if (f16Decode(below) === a) return sign | below;
  const above = below + 1;
  const db = a - f16Decode(below), da = f16Decode(above) - a;
  if (db < da) return sign | below;
  if (da < db) return sign | above;
  return sign | (below % 2 === 0 ? below : above);
}

export function bf16Decode(h: number): number {
  return bitsF32((h & 0xffff) << 16);
}

/** f32 -> bf16 with round to nearest even (NaN stays NaN). */
export function bf16Encode(x: number): number {
  const u = f32Bits(x);
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 0x40) & 0xffff;
  const upper = u >>> 16, rest = u & 0xffff;
  if (rest > 0x8000 || (rest === 0x8000 && upper & 1)) return (upper + 1) & 0xffff;
  return upper;
}

/** Stores float values in dtype (0 f32, 1 f16, 2 bf16) as little-endian bytes. */
export function encodeFloats(v: ArrayLike<number>, dtype: ScaleDtype): Uint8Array {
  if (dtype === 0) return new Uint8Array(Float32Array.from(v).buffer);
  const h = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) h[i] = dtype === 1 ? f16Encode(v[i]!) : bf16Encode(v[i]!);
  return new Uint8Array(h.buffer);
}

export function decodeFloat(bytes: Uint8Array, dtype: ScaleDtype, i: number): number {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dtype === 0) return dv.getFloat32(4 * i, true);
  const h = dv.getUint16(2 * i, true);
  return dtype === 1 ? f16Decode(h) : bf16Decode(h);
}

/** Code c of a packed row: the bits c*b .. c*b+b-1 of the row's LSB-first bit stream (docs/architecture/formats.md (b)). */
export function codeAt(row: Uint8Array, bits: number, c: number): number {
  let q = 0;
  for (let k = 0; k < bits; k++) {
    const t = c * bits + k;
    q |= ((row[t >> 3]! >> (t & 7)) & 1) << k;
  }
  return q;
}

export interface QWeight {
  rows: number;
  cols: number;
  bits: number;
  group: number;
  scaleDtype: ScaleDtype;
  packed: Uint8Array;
  scales: Uint8Array;
  biases: Uint8Array;
}

export function nativeQ(q: QWeight): native.NativeWeight {
  return {
    dtype: 3, data: q.packed, rows: q.rows, cols: q.cols, scales: q.scales, biases: q.biases,
    scaleDtype: q.scaleDtype, bits: q.bits as 4, groupSize: q.group as 64,
  };
}

/** Random packed codes with random-sign scales and biases (every code value occurs). */
/** The same weight in the 16-row tile layout (packWeightTiles into new buffers), as `layout: 1`. */
export function tiled(w: native.NativeWeight): native.NativeWeight {
  const data = new Uint8Array((w.data as Uint8Array).byteLength);
  const scales = new Uint8Array(w.scales!.byteLength), biases = new Uint8Array(w.biases!.byteLength);
  native.packWeightTiles(w, { data, scales, biases });
  return { ...w, data, scales, biases, layout: 1 };
}

export function randomQ(rows: number, cols: number, bits: number, group: number, scaleDtype: ScaleDtype, seed: number): QWeight {
  const r = rng(seed);
  const packed = randBytes((rows * cols * bits) / 8, seed + 1);
  const ng = (rows * cols) / group;
  const s = new Float32Array(ng), b = new Float32Array(ng);
  for (let i = 0; i < ng; i++) {
    s[i] = (r() < 0.5 ? -1 : 1) * (0.002 + 0.05 * r()) * (8 / bits);
    b[i] = (r() - 0.5) * 0.4;
  }
  return { rows, cols, bits, group, scaleDtype, packed, scales: encodeFloats(s, scaleDtype), biases: encodeFloats(b, scaleDtype) };
}

/** f(s, q, b) for every element of a quantized weight (its scale, code and bias), in float64. */
function mapQuant(q: QWeight, f: (s: number, code: number, b: number) => number): Float64Array {
  const out = new Float64Array(q.rows * q.cols);
  const rowBytes = (q.cols * q.bits) / 8, gpr = q.cols / q.group;
  for (let r = 0; r < q.rows; r++) {
    const row = q.packed.subarray(r * rowBytes, (r + 1) * rowBytes);
    for (let c = 0; c < q.cols; c++) {
      const g = r * gpr + Math.floor(c / q.group);
      out[r * q.cols + c] = f(decodeFloat(q.scales, q.scaleDtype, g), codeAt(row, q.bits, c), decodeFloat(q.biases, q.scaleDtype, g));
    }
  }
  return out;
}

/** W[r, c] = s * q + b in float64 (what the weight means; kernels may round each term to f32). */
export function dequantRef(q: QWeight): Float64Array {
  return mapQuant(q, (s, code, b) => s * code + b);
}

/**
 * The MLX affine quantizer of docs/architecture/formats.md (b), every step in f32 (Math.fround) as MLX computes it:
 * s = max((max - min) / n, 1e-7); the larger-magnitude edge is kept exact (s negated when it is the max);
 * q0 = round(edge / s); if q0 != 0 then s = edge / q0, bias = edge else bias = 0;
 * q = clamp(round((w - bias) / s), 0, n), round half to even. Codes packed LSB-first into U32 words.
 */
export function mlxQuantize(w: Float32Array, rows: number, cols: number, bits: number, group: number) {
  const f = Math.fround;
  const n = 2 ** bits - 1;
  const gpr = cols / group;
  const words = new Uint32Array((rows * cols * bits) / 32);
  const bytes = new Uint8Array(words.buffer);
  const scales = new Float32Array(rows * gpr), biases = new Float32Array(rows * gpr);
  const rowBytes = (cols * bits) / 8;
  for (let r = 0; r < rows; r++)
    for (let g = 0; g < gpr; g++) {
      const base = r * cols + g * group;
      let mx = w[base]!, mn = w[base]!;
      for (let i = 1; i < group; i++) {
        mx = Math.max(mx, w[base + i]!);
        mn = Math.min(mn, w[base + i]!);
      }
      let s = Math.max(f(f(mx - mn) / n), f(1e-7));
      let edge: number;
      if (Math.abs(mn) > Math.abs(mx)) edge = mn;
      else {
        s = -s;
        edge = mx;
      }
      const q0 = roundHalfEven(f(edge / s));
      let bias = 0;
      if (q0 !== 0) {
        s = f(edge / q0);
        bias = edge;
      }
      scales[r * gpr + g] = s;
      biases[r * gpr + g] = bias;
      for (let i = 0; i < group; i++) {
        const q = Math.min(Math.max(roundHalfEven(f(f(w[base + i]! - bias) / s)), 0), n);
        const c = g * group + i;
        for (let k = 0; k < bits; k++) {
          const t = c * bits + k;
          if ((q >> k) & 1) bytes[r * rowBytes + (t >> 3)]! |= 1 << (t & 7);
        }
      }
    }
  return { words, scales, biases };
}

export function roundHalfEven(x: number): number {
  const fl = Math.floor(x);
  const d = x - fl;
  if (d < 0.5) return fl;
  if (d > 0.5) return fl + 1;
  return fl % 2 === 0 ? fl : fl + 1;
}

/**
 * Checks y (from the kernel) against the float64 reference of y[M, N] = x W^T + bias. The error of each
 * output is normalised by the natural size of f32 rounding in that sum, sum_k |x_k| * mag(W_nk) + |bias_n|,
 * where mag(W) = |W| for float weights and |s*q| + |b| for quantized ones (the two terms a factored
 * quantized dot product accumulates). Returns the largest normalised error; throws above `bound`.
 */
export function checkMatmul(
  y: Float32Array, x: Float32Array, M: number, K: number, W: Float64Array, N: number, bias: Float32Array | null,
  bound: number, label: string, mag: Float64Array = W,
): number {
  let worst = 0;
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++) {
      let s = 0, l1 = 0;
      for (let k = 0; k < K; k++) {
        const xv = x[m * K + k]!;
        s += xv * W[n * K + k]!;
        l1 += Math.abs(xv) * Math.abs(mag[n * K + k]!);
      }
      const b = bias ? bias[n]! : 0;
      const ref = s + b;
      const scale = l1 + Math.abs(b) + 1e-30;
      const got = y[m * N + n]!;
      const e = Math.abs(got - ref) / scale;
      if (!(e <= bound))
        throw new Error(`${label}: y[${m}, ${n}] = ${got}, reference ${ref}: normalised error ${e.toExponential(2)} > ${bound}`);
      worst = Math.max(worst, e);
    }
  return worst;
}

/** mag(W) for a quantized weight: |s * q| + |b| per element (see checkMatmul). */
export function quantMagnitude(q: QWeight): Float64Array {
  return mapQuant(q, (s, code, b) => Math.abs(s * code) + Math.abs(b));
}

/** |a - e| <= abs + rel * |e| elementwise (NaN must match NaN; infinities must match exactly). */
export function checkClose(a: ArrayLike<number>, e: ArrayLike<number>, abs: number, rel: number, label: string): void {
  if (a.length !== e.length) throw new Error(`${label}: length ${a.length} != ${e.length}`);
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!, y = e[i]!;
    if (Number.isNaN(y)) {
      if (!Number.isNaN(x)) throw new Error(`${label}[${i}]: got ${x}, expected NaN`);
      continue;
    }
    if (!Number.isFinite(y)) {
      if (x !== y) throw new Error(`${label}[${i}]: got ${x}, expected ${y}`);
      continue;
    }
    if (!(Math.abs(x - y) <= abs + rel * Math.abs(y)))
      throw new Error(`${label}[${i}]: got ${x}, expected ${y} (|diff| ${Math.abs(x - y).toExponential(2)} > ${abs} + ${rel}*|e|)`);
  }
}

/** Every kernel variant this binary has and this CPU runs (the conformance tests iterate them all). */
export const VARIANTS: string[] = native.cpuInfo().variants;

/**
 * The integer-activation matmul's definition (test/matmul-q8act.test.ts's header) in float64
 * (integer dot products exact), with the error normaliser per element.
 */
export function q8actReference(x: Float32Array, M: number, q: QWeight, bias: Float32Array | null, T: number) {
  const f = Math.fround;
  const K = q.cols, N = q.rows, G = q.group, gpr = K / G, rowBytes = (K * q.bits) / 8;
  const xq = new Int32Array(M * K), dx = new Float64Array(M * gpr), xs = new Float64Array(M * gpr), xa = new Float64Array(M * gpr);
  for (let m = 0; m < M; m++)
    for (let g = 0; g < gpr; g++) {
      let mx = 0, s = 0, a = 0;
      for (let c = g * G; c < (g + 1) * G; c++) {
        mx = Math.max(mx, Math.abs(x[m * K + c]!));
        s += x[m * K + c]!;
        a += Math.abs(x[m * K + c]!);
      }
      dx[m * gpr + g] = f(mx / T);
      xs[m * gpr + g] = s;
      xa[m * gpr + g] = a;
      const inv = mx > 0 ? f(T / mx) : 0;
      for (let c = g * G; c < (g + 1) * G; c++) xq[m * K + c] = roundHalfEven(f(x[m * K + c]! * inv));
    }
  const y = new Float64Array(M * N), norm = new Float64Array(M * N);
  for (let n = 0; n < N; n++) {
    const row = q.packed.subarray(n * rowBytes, (n + 1) * rowBytes);
    const codes = new Int32Array(K);
    for (let c = 0; c < K; c++) codes[c] = codeAt(row, q.bits, c);
    for (let m = 0; m < M; m++) {
      let acc = bias ? bias[n]! : 0, l1 = bias ? Math.abs(bias[n]!) : 0;
      for (let g = 0; g < gpr; g++) {
        const s = decodeFloat(q.scales, q.scaleDtype, n * gpr + g), b = decodeFloat(q.biases, q.scaleDtype, n * gpr + g);
        let dot = 0, mag = 0;
        for (let c = g * G; c < (g + 1) * G; c++) {
          dot += codes[c]! * xq[m * K + c]!;
          mag += codes[c]! * Math.abs(xq[m * K + c]!);
        }
        const d = dx[m * gpr + g]!;
        acc += s * d * dot + b * xs[m * gpr + g]!;
        l1 += Math.abs(s * d) * mag + Math.abs(b) * xa[m * gpr + g]!;
      }
      y[m * N + n] = acc;
      norm[m * N + n] = l1;
    }
  }
  return { y, norm };
}
