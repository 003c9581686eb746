// The fused passes of batched decode and prefill (src/isa/norms_elementwise.h) on every kernel variant,
// against float64 references written here:
//   mixStreams: outputs[i][t] = sum_j c[t,i,j] inputs[j][t]; |d| <= 1e-6 sum_j |c x| (f32 sums of <= 16 terms)
//   softcapCheck: cap * tanh(x / cap), |d| <= 4e-6 cap; the first non-finite index; non-finite left as is
//   gatedAct: act(gate) * up, |d| <= 4e-6 |ref| + 2e-7 (the unary bound)
//   gaussianTopK: max(x - (mean + std z), 0) with double statistics, |d| <= 1e-6 (|x| + |cutoff|)
// plus the position independence of vectorized elementwise results (batched rows == single rows).
import { afterAll, describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';
import { randF32, VARIANTS } from './helpers.js';

const initialIsa = native.cpuInfo().isa;
afterAll(() => native.setIsa(initialIsa));
const { UnaryOp } = native;

for (const isa of VARIANTS) {
  describe(`fused passes [${isa}]`, () => {
    it('mixStreams: per-row coefficients, outputs aliasing inputs, zero coefficients dropped', () => {
      native.setIsa(isa);
      for (const [rows, width, J, I] of [[1, 7, 4, 4], [5, 37, 5, 4], [3, 2048, 2, 3], [9, 200, 16, 16]] as const) {
        const ins = Array.from({ length: J }, (_, j) => randF32(rows * width, 10 * j + rows, -3, 3));
        const c = randF32(rows * I * J, width, -2, 2);
        for (let t = 0; t < rows; t++) c[(t * I + 0) * J + (t % J)] = 0; // some exact zeros
        const outs = Array.from({ length: I }, () => new Float32Array(rows * width));
        native.mixStreams(ins, c, outs, rows, width);
        for (let i = 0; i < I; i++)
          for (let t = 0; t < rows; t++)
            for (let e = 0; e < width; e++) {
              let ref = 0, mag = 0;
              for (let j = 0; j < J; j++) {
                const v = c[(t * I + i) * J + j]! * ins[j]![t * width + e]!;
                ref += v;
                mag += Math.abs(v);
              }
              const d = Math.abs(outs[i]![t * width + e]! - ref);
              if (!(d <= 1e-6 * mag + 1e-30)) throw new Error(`${isa} rows=${rows} width=${width} out ${i} [${t}, ${e}]: ${outs[i]![t * width + e]} vs ${ref}`);
            }
        // In place: the outputs are the inputs (AltUp predict writes new streams over old ones).
        if (I <= J) {
          const copy = ins.map((x) => x.slice());
          native.mixStreams(copy, c.subarray(0, rows * I * J), copy.slice(0, I), rows, width);
          for (let i = 0; i < I; i++) expect(copy[i]).toEqual(outs[i]);
        }
      }
      // A zero coefficient drops its input: 0 * Inf adds nothing.
      const a = Float32Array.of(1, 2), b = Float32Array.of(Infinity, 3), o = new Float32Array(2);
      native.mixStreams([a, b], Float32Array.of(2, 0), [o], 1, 2);
      expect(Array.from(o)).toEqual([2, 4]);
    });

    it('mixStreams rejects bad shapes with named arguments', () => {
      native.setIsa(isa);
      const x = new Float32Array(8);
      expect(() => native.mixStreams([], new Float32Array(1), [x], 1, 8)).toThrow(/inputs has 0 arrays/);
      expect(() => native.mixStreams([x], new Float32Array(1), Array(17).fill(x), 1, 8)).toThrow(/outputs has 17 arrays/);
      expect(() => native.mixStreams([x, x], new Float32Array(3), [x, x], 1, 8)).toThrow(/coefs/);
      expect(() => native.mixStreams([x], new Float32Array(1), [new Float32Array(4)], 1, 8)).toThrow(/outputs\[0\]/);
      expect(() => native.mixStreams([x], new Float32Array(4), [x], 2 ** 33, 2 ** 30)).toThrow(RangeError);
    });

    it('softcapCheck: the soft-cap, the first non-finite index, non-finite values left in place', () => {
      native.setIsa(isa);
      for (const n of [1, 15, 16, 17, 1000, 70001]) {
        const x = randF32(n, n, -200, 200);
        const out = new Float32Array(n);
        expect(native.softcapCheck(x, 30, out)).toBe(-1);
        for (let i = 0; i < n; i++) {
          const ref = 30 * Math.tanh(x[i]! / 30);
          if (!(Math.abs(out[i]! - ref) <= 4e-6 * 30)) throw new Error(`${isa} n=${n} [${i}]: ${out[i]} vs ${ref}`);
        }
        if (n > 2) {
          x[n - 1] = Infinity;
          x[Math.floor(n / 2)] = NaN;
          const y = x.slice();
          expect(native.softcapCheck(y, 30, y)).toBe(Math.floor(n / 2)); // in place
          expect(Number.isNaN(y[Math.floor(n / 2)]!)).toBe(true);
          expect(y[n - 1]).toBe(Infinity);
        }
      }
      const x = Float32Array.of(1, -Infinity, 3);
      const copy = new Float32Array(3);
      expect(native.softcapCheck(x, 0, copy)).toBe(1); // cap 0: check and copy
      expect(Array.from(copy)).toEqual([1, -Infinity, 3]);
      expect(() => native.softcapCheck(x, -1, x)).toThrow(/cap must be a finite number >= 0/);
      expect(() => native.softcapCheck(x, 30, new Float32Array(2))).toThrow(/out/);
    });

    it('gatedAct: SiLU and GELU (tanh) of the gate half times the up half; out must not overlap x', () => {
      native.setIsa(isa);
      for (const [rows, half] of [[1, 1], [3, 17], [7, 1000], [2, 8192]] as const) {
        const x = randF32(rows * 2 * half, rows + half, -6, 6);
        for (const [act, f] of [
          [UnaryOp.SILU, (v: number) => v / (1 + Math.exp(-v))],
          [UnaryOp.GELU_TANH, (v: number) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)))],
        ] as const) {
          const out = new Float32Array(rows * half);
          native.gatedAct(x, rows, half, act, out);
          for (let r = 0; r < rows; r++)
            for (let i = 0; i < half; i++) {
              const ref = f(x[r * 2 * half + i]!) * x[r * 2 * half + half + i]!;
              if (!(Math.abs(out[r * half + i]! - ref) <= 4e-6 * Math.abs(ref) + 2e-7 * Math.abs(x[r * 2 * half + half + i]!)))
                throw new Error(`${isa} act ${act} [${r}, ${i}]: ${out[r * half + i]} vs ${ref}`);
            }
        }
      }
      const x = new Float32Array(8);
      expect(() => native.gatedAct(x, 1, 4, UnaryOp.SILU, x.subarray(2, 6))).toThrow(/overlaps x/);
      expect(() => native.gatedAct(x, 1, 4, UnaryOp.TANH, new Float32Array(4))).toThrow(/act must be/);
      expect(() => native.gatedAct(x, 2, 4, UnaryOp.SILU, new Float32Array(8))).toThrow(/x/);
    });

    it('gaussianTopK: mean + population std cut-off per row, statistics in double', () => {
      native.setIsa(isa);
      for (const [rows, dim] of [[1, 4], [5, 333], [3, 8192]] as const) {
        const x = randF32(rows * dim, dim, -4, 4);
        const y = x.slice();
        native.gaussianTopK(y, rows, dim, 1.6448536269514722);
        for (let r = 0; r < rows; r++) {
          let s = 0;
          for (let i = 0; i < dim; i++) s += x[r * dim + i]!;
          const mean = s / dim;
          let ss = 0;
          for (let i = 0; i < dim; i++) ss += (x[r * dim + i]! - mean) ** 2;
          const cut = mean + Math.sqrt(ss / dim) * 1.6448536269514722;
          for (let i = 0; i < dim; i++) {
            const ref = Math.max(x[r * dim + i]! - cut, 0);
            expect(Math.abs(y[r * dim + i]! - ref)).toBeLessThanOrEqual(1e-6 * (Math.abs(x[r * dim + i]!) + Math.abs(cut)));
          }
        }
      }
      expect(() => native.gaussianTopK(new Float32Array(4), 1, 4, NaN)).toThrow(/z must be a finite number/);
    });

    it('vectorized elementwise results do not depend on position or length (tails run the vector code)', () => {
      native.setIsa(isa);
      const v = randF32(64, 9, -3, 3);
      for (const op of [UnaryOp.TANH, UnaryOp.GELU_TANH, UnaryOp.SILU, UnaryOp.EXP, UnaryOp.SIGMOID]) {
        const whole = new Float32Array(64);
        native.unary(op, v, whole);
        for (const n of [1, 3, 5, 17, 33]) {
          const part = new Float32Array(n);
          native.unary(op, v.subarray(64 - n), part);
          expect(part, `op ${op} last ${n}`).toEqual(whole.subarray(64 - n));
        }
      }
      const caps = new Float32Array(64), one = new Float32Array(3);
      native.softcapCheck(v, 30, caps);
      native.softcapCheck(v.subarray(61), 30, one);
      expect(one).toEqual(caps.subarray(61));
    });
  });
}
