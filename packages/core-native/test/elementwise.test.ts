// Conformance of the row and elementwise kernels (norms, softmax, unary, binary with broadcast, affine,
// RoPE) on every kernel variant, against float64 references written here. Sizes are odd on purpose (tails
// shorter than a vector) and some exceed the thread pool's grain (parallel path). Bounds, stated per op:
//   rmsNorm / layerNorm: |d| <= 1e-5 |ref| + 1e-6           softmax: |d| <= 1e-5 |ref| + 1e-7
//   unary ops: |d| <= 4e-6 |ref| + 2e-7 (exp is a polynomial approximation within ~2 ulp)
//   binary ops: exact (IEEE f32 +, -, *, /, max)              affine: one rounding of x*s + t
//   rope: |d| <= 2^-22 (|a cos| + |b sin|) for a' = a cos - b sin (likewise for b')
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';
import { checkClose, randF32, rng, VARIANTS } from './helpers.js';

const initialIsa = native.cpuInfo().isa;
afterAll(() => native.setIsa(initialIsa));

const { UnaryOp, BinaryOp } = native;

function erf(x: number): number {
  // Maclaurin series for |x| < 3 (terms alternate; float64 keeps ~1e-15 here), continued fraction for
  // erfc beyond (converges fast for large |x|).
  const a = Math.abs(x);
  let r: number;
  if (a < 3) {
    let sum = 0, term = a;
    for (let n = 0; n < 100; n++) {
      sum += term / (2 * n + 1);
      term *= (-a * a) / (n + 1);
    }
    r = (2 / Math.sqrt(Math.PI)) * sum;
  } else {
    let f = 0;
    for (let n = 80; n >= 1; n--) f = n / 2 / (a + f);
    r = 1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / (a + f);
  }
  return x < 0 ? -r : r;
}

const UNARY: Record<string, [number, (v: number) => number]> = {
  silu: [UnaryOp.SILU, (v) => v / (1 + Math.exp(-v))],
  geluTanh: [UnaryOp.GELU_TANH, (v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)))],
  geluErf: [UnaryOp.GELU_ERF, (v) => 0.5 * v * (1 + erf(v / Math.SQRT2))],
  relu: [UnaryOp.RELU, (v) => (v > 0 ? v : 0)],
  tanh: [UnaryOp.TANH, Math.tanh],
  exp: [UnaryOp.EXP, Math.exp],
  sigmoid: [UnaryOp.SIGMOID, (v) => 1 / (1 + Math.exp(-v))],
  neg: [UnaryOp.NEG, (v) => -v],
  square: [UnaryOp.SQUARE, (v) => v * v],
  sqrt: [UnaryOp.SQRT, Math.sqrt],
};

const SIZES = [1, 7, 33, 1000, 40_001];

function rmsRef(x: Float32Array, dim: number, w: Float32Array | null, eps: number, plusOne: boolean): Float64Array {
  const y = new Float64Array(x.length);
  for (let r = 0; r < x.length / dim; r++) {
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[r * dim + i]! ** 2;
    const inv = 1 / Math.sqrt(ss / dim + eps);
    for (let i = 0; i < dim; i++) y[r * dim + i] = x[r * dim + i]! * inv * (w ? (plusOne ? 1 + w[i]! : w[i]!) : 1);
  }
  return y;
}

function layerRef(x: Float32Array, dim: number, w: Float32Array | null, b: Float32Array | null, eps: number): Float64Array {
  const y = new Float64Array(x.length);
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

function softmaxRef(x: Float32Array, dim: number): Float64Array {
  const y = new Float64Array(x.length);
  for (let r = 0; r < x.length / dim; r++) {
    let m = -Infinity;
    for (let i = 0; i < dim; i++) m = Math.max(m, x[r * dim + i]!);
    let s = 0;
    for (let i = 0; i < dim; i++) s += Math.exp(x[r * dim + i]! - m);
    for (let i = 0; i < dim; i++) y[r * dim + i] = Math.exp(x[r * dim + i]! - m) / s;
  }
  return y;
}

for (const isa of VARIANTS) {
  describe(`row and elementwise kernels [${isa}]`, () => {
    beforeAll(() => {
      native.setIsa(isa);
    });

    it('rmsNorm: plain weight, Gemma (1 + w), and no weight; odd dims; many rows (parallel)', () => {
      expect(native.cpuInfo().isa).toBe(isa);
      for (const [rows, dim] of [[1, 1], [3, 7], [5, 33], [2, 4099], [300, 64]] as const) {
        const x = randF32(rows * dim, dim + rows, -3, 3);
        const w = randF32(dim, dim, -1, 1);
        for (const [weight, plusOne] of [[w, false], [w, true], [null, false]] as const) {
          const out = new Float32Array(rows * dim);
          native.rmsNorm(x, rows, dim, weight, 1e-6, plusOne, out);
          checkClose(out, rmsRef(x, dim, weight, 1e-6, plusOne), 1e-6, 1e-5, `${isa} rmsNorm ${rows}x${dim} w=${!!weight} plusOne=${plusOne}`);
        }
      }
      // eps dominates an all-zero row: output 0, not NaN.
      const z = new Float32Array(8);
      const out = new Float32Array(8).fill(NaN);
      native.rmsNorm(z, 1, 8, null, 1e-5, false, out);
      expect(Array.from(out)).toEqual(new Array(8).fill(0));
    });

    it('layerNorm: with and without bias (and without weight); odd dims', () => {
      for (const [rows, dim] of [[1, 1], [3, 7], [4, 33], [2, 4099], [200, 96]] as const) {
        const x = randF32(rows * dim, dim * 3 + rows, -2, 4); // non-zero mean
        const w = randF32(dim, 1 + dim), b = randF32(dim, 2 + dim);
        for (const [weight, bias] of [[w, b], [w, null], [null, null], [null, b]] as const) {
          const out = new Float32Array(rows * dim);
          native.layerNorm(x, rows, dim, weight, bias, 1e-5, out);
          checkClose(out, layerRef(x, dim, weight, bias, 1e-5), 1e-6, 1e-5, `${isa} layerNorm ${rows}x${dim} w=${!!weight} b=${!!bias}`);
        }
      }
    });

    it('softmax: odd dims, large logits, -inf entries, and a fully masked row (all zeros, not NaN)', () => {
      for (const [rows, dim] of [[1, 1], [3, 5], [7, 33], [2, 1000], [64, 257]] as const) {
        const x = randF32(rows * dim, dim + 11, -20, 20);
        const r = rng(dim);
        for (let i = 0; i < x.length; i++) if (r() < 0.2) x[i] = -Infinity;
        for (let row = 0; row < rows; row++) x[row * dim] = 50 + row; // every row keeps a finite maximum
        const out = new Float32Array(rows * dim);
        native.softmax(x, rows, dim, out);
        checkClose(out, softmaxRef(x, dim), 1e-7, 1e-5, `${isa} softmax ${rows}x${dim}`);
      }
      const big = Float32Array.from([1000, 999, -1000, 1000]);
      const o = new Float32Array(4);
      native.softmax(big, 1, 4, o);
      checkClose(o, softmaxRef(big, 4), 1e-7, 1e-5, `${isa} softmax large`);
      const masked = Float32Array.from([-Infinity, -Infinity, -Infinity, 1, 2, 3]);
      const om = new Float32Array(6).fill(NaN);
      native.softmax(masked, 2, 3, om);
      expect(Array.from(om.subarray(0, 3))).toEqual([0, 0, 0]);
      checkClose(om.subarray(3), softmaxRef(masked.subarray(3), 3), 1e-7, 1e-5, `${isa} softmax after masked row`);
    });

    it('logSoftmax: one row against a float64 reference, in place, block tails, -inf, the same bits on 1 and 2 threads', () => {
      // 1, 15, 17: below and around one vector; 4096 / 4097: one block and a 1-element tail block;
      // 262144 + 5: Gemma's vocabulary, ragged.
      for (const n of [1, 15, 17, 4096, 4097, 262149]) {
        const x = randF32(n, n + 3, -30, 30);
        const r = rng(n);
        for (let i = 0; i < n; i++) if (r() < 0.1) x[i] = -Infinity;
        const top = (n * 7) >> 3;
        x[top] = 40; // the maximum, and a later tie: argmax is the first one
        if (top + 1 < n) x[top + 1] = 40;
        let m = -Infinity;
        for (let i = 0; i < n; i++) m = Math.max(m, x[i]!);
        let s = 0;
        for (let i = 0; i < n; i++) s += Math.exp(x[i]! - m);
        const lse = m + Math.log(s);
        const out = new Float32Array(n).fill(NaN);
        expect(native.logSoftmax(x, out)).toEqual({ max: 40, argmax: top, firstNaN: -1 });
        let worst = 0;
        for (let i = 0; i < n; i++) {
          if (x[i] === -Infinity) expect(out[i], `n=${n} [${i}]`).toBe(-Infinity);
          else worst = Math.max(worst, Math.abs(out[i]! - (x[i]! - lse)) / Math.max(1, Math.abs(x[i]! - lse)));
        }
        expect(worst, `${isa} n=${n}`).toBeLessThanOrEqual(1e-6);
        const inPlace = x.slice();
        native.logSoftmax(inPlace, inPlace);
        expect(inPlace).toEqual(out);
        const threads = native.cpuInfo().threads;
        native.setThreads(1);
        const one = new Float32Array(n);
        native.logSoftmax(x, one);
        native.setThreads(threads);
        expect(one).toEqual(out);
      }
    });

    it('logSoftmax: reports the first NaN, +Infinity and an all -Infinity row; rejects bad arguments', () => {
      const x = new Float32Array(10000).fill(1);
      x[9000] = NaN;
      x[5000] = NaN;
      expect(native.logSoftmax(x, new Float32Array(10000)).firstNaN).toBe(5000);
      const inf = new Float32Array(100).fill(2);
      inf[42] = Infinity;
      expect(native.logSoftmax(inf, new Float32Array(100))).toMatchObject({ max: Infinity, argmax: 42, firstNaN: -1 });
      expect(native.logSoftmax(new Float32Array(5000).fill(-Infinity), new Float32Array(5000))).toMatchObject({ argmax: -1, firstNaN: -1 });
      expect(() => native.logSoftmax(new Float32Array(4), new Float32Array(3))).toThrow(/logSoftmax: out must have x's length \(4\)/);
      expect(() => native.logSoftmax(new Float32Array(0), new Float32Array(0))).toThrow(/logSoftmax: x must not be empty/);
      expect(() => native.logSoftmax(new Float64Array(4) as unknown as Float32Array, new Float32Array(4))).toThrow(/logSoftmax: x must be a Float32Array/);
    });

    for (const [name, [op, ref]] of Object.entries(UNARY)) {
      it(`unary ${name}: lengths ${SIZES.join(', ')} over a wide range`, () => {
        for (const n of SIZES) {
          const lo = name === 'sqrt' ? 0 : name === 'exp' ? -80 : -12;
          const hi = name === 'exp' ? 80 : 12;
          const x = randF32(n, n + op, lo, hi);
          if (n > 7) {
            x[0] = 0;
            x[1] = -0;
            x[2] = 1e-20;
            x[3] = name === 'exp' ? -87 : -40;
            x[4] = name === 'exp' ? 88 : 40;
            x[5] = name === 'sqrt' ? -1 : -1e-8; // sqrt(-1) = NaN
          }
          const out = new Float32Array(n);
          native.unary(op, x, out);
          const e = Float64Array.from(x, (v) => ref(v));
          checkClose(out, e, 2e-7, 4e-6, `${isa} ${name} n=${n}`);
        }
      });
    }

    it('binary ops: same length, broadcast over leading axes, scalar broadcast (exact)', () => {
      const ops: [string, number, (a: number, b: number) => number][] = [
        ['add', BinaryOp.ADD, (a, b) => a + b], ['sub', BinaryOp.SUB, (a, b) => a - b], ['mul', BinaryOp.MUL, (a, b) => a * b],
        ['div', BinaryOp.DIV, (a, b) => a / b], ['max', BinaryOp.MAX, (a, b) => Math.max(a, b)],
      ];
      for (const [name, op, f] of ops)
        for (const [n, nb] of [[1, 1], [33, 33], [40_001, 40_001], [35, 7], [64 * 33, 33], [40_005, 5], [17, 1]] as const) {
          const a = randF32(n, n + op, -5, 5), b = randF32(nb, nb + 3 * op, -5, 5);
          const out = new Float32Array(n);
          native.binary(op, a, b, out);
          for (let i = 0; i < n; i++) {
            const e = Math.fround(f(a[i]!, b[i % nb]!));
            if (out[i] !== e) throw new Error(`${isa} ${name} n=${n} nb=${nb} [${i}]: ${out[i]} vs ${e}`);
          }
        }
    });

    it('affine: out = x * s + t, one rounding at most per operation', () => {
      for (const n of SIZES) {
        const x = randF32(n, n, -100, 100);
        for (const [s, t] of [[0.5, 0], [-3.25, 1.5], [1e-3, -7]] as const) {
          const out = new Float32Array(n);
          native.affine(x, s, t, out);
          for (let i = 0; i < n; i++) {
            const e = x[i]! * Math.fround(s) + Math.fround(t);
            const tol = 2 ** -23 * (Math.abs(x[i]! * s) + Math.abs(t));
            if (!(Math.abs(out[i]! - e) <= tol)) throw new Error(`${isa} affine n=${n} [${i}]: ${out[i]} vs ${e}`);
          }
        }
      }
    });

    it('linearCombine: out = sum_j c_j x_j for 1..9 inputs, in place on an input too', () => {
      for (const n of SIZES) {
        for (const k of [1, 2, 4, 9]) {
          const xs = Array.from({ length: k }, (_, j) => randF32(n + j, n * 31 + j, -10, 10)); // longer inputs are fine
          const c = randF32(k, k * 7 + n, -2, 2);
          const ref = new Float64Array(n), mag = new Float64Array(n);
          for (let j = 0; j < k; j++)
            for (let i = 0; i < n; i++) {
              ref[i] += c[j]! * xs[j]![i]!;
              mag[i] += Math.abs(c[j]! * xs[j]![i]!);
            }
          const out = new Float32Array(n);
          native.linearCombine(xs, c, out);
          for (let i = 0; i < n; i++)
            if (!(Math.abs(out[i]! - ref[i]!) <= 2 ** -22 * k * mag[i]!)) throw new Error(`${isa} linearCombine n=${n} k=${k} [${i}]: ${out[i]} vs ${ref[i]}`);
          // out aliasing the first input gives the same result.
          const x0 = xs[0]!.slice(0, n);
          native.linearCombine([x0, ...xs.slice(1)], c, x0);
          expect(Buffer.from(x0.buffer).equals(Buffer.from(out.buffer))).toBe(true);
        }
      }
    });

    it('rope: half-split and interleaved pairs, partial rotary dims pass the rest through, arbitrary positions', () => {
      for (const [nTok, nHeads, headDim, rotDim] of [[1, 1, 2, 2], [3, 4, 64, 64], [5, 3, 96, 48], [17, 2, 80, 20], [300, 2, 32, 32]] as const)
        for (const interleaved of [false, true]) {
          const half = rotDim / 2, tabRows = 400;
          const cos = new Float32Array(tabRows * half), sin = new Float32Array(tabRows * half);
          for (let p = 0; p < tabRows; p++)
            for (let i = 0; i < half; i++) {
              const a = p / 10000 ** ((2 * i) / rotDim);
              cos[p * half + i] = Math.cos(a);
              sin[p * half + i] = Math.sin(a);
            }
          const r = rng(nTok * 7 + headDim);
          const pos = Int32Array.from({ length: nTok }, () => Math.floor(r() * tabRows));
          const x = randF32(nTok * nHeads * headDim, nTok + headDim, -2, 2);
          const out = x.slice();
          native.rope(out, nTok, nHeads, headDim, pos, cos, sin, rotDim, interleaved);
          for (let t = 0; t < nTok; t++)
            for (let h = 0; h < nHeads; h++) {
              const base = (t * nHeads + h) * headDim;
              const seen = new Set<number>();
              for (let i = 0; i < half; i++) {
                const [ia, ib] = interleaved ? [2 * i, 2 * i + 1] : [i, i + half];
                const a = x[base + ia]!, b = x[base + ib]!;
                const c = cos[pos[t]! * half + i]!, s = sin[pos[t]! * half + i]!;
                const tolA = 2 ** -22 * (Math.abs(a * c) + Math.abs(b * s));
                const tolB = 2 ** -22 * (Math.abs(b * c) + Math.abs(a * s));
                const ea = a * c - b * s, eb = b * c + a * s;
                if (!(Math.abs(out[base + ia]! - ea) <= tolA && Math.abs(out[base + ib]! - eb) <= tolB))
                  throw new Error(`${isa} rope inter=${interleaved} t=${t} h=${h} i=${i}: (${out[base + ia]}, ${out[base + ib]}) vs (${ea}, ${eb})`);
                seen.add(ia).add(ib);
              }
              for (let d = 0; d < headDim; d++) if (!seen.has(d)) expect(out[base + d]).toBe(x[base + d]);
            }
        }
    });

    it('rope of a token is bitwise independent of the other tokens in the call', () => {
      const half = 16, nHeads = 2, headDim = 32;
      const cos = randF32(64 * half, 1), sin = randF32(64 * half, 2);
      const x = randF32(5 * nHeads * headDim, 3);
      const all = x.slice();
      native.rope(all, 5, nHeads, headDim, Int32Array.from([3, 9, 20, 21, 40]), cos, sin, 32, false);
      const one = x.slice(2 * nHeads * headDim, 3 * nHeads * headDim);
      native.rope(one, 1, nHeads, headDim, Int32Array.from([20]), cos, sin, 32, false);
      expect(Buffer.from(one.buffer).equals(Buffer.from(all.slice(2 * nHeads * headDim, 3 * nHeads * headDim).buffer))).toBe(true);
    });
  });
}
