/**
 * Test helpers: a seeded RNG, expert weights in every storage form together with the f32 values the
 * kernel must see (decoded independently of the native code, by @mlxcel/tensor's pure-TS reference),
 * and a naive float64 SwitchGLU to compare against.
 */
import * as native from '@mlxcel/core-native';
import { QuantizedWeight, reference, Tensor, Weight } from '@mlxcel/tensor';
import { SwitchGLU, type Activation } from '../src/index.js';

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

export function uniform(n: number, r: () => number, scale = 1): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (r() * 2 - 1) * scale;
  return a;
}

export type Storage = 'f32' | 'bf16' | 'q4';

/** A stacked weight [E, rows, cols] stored as `kind`, and the f32 values it decodes to. */
export function makeWeight(data: Float32Array, shape: [number, number, number], kind: Storage, group = 64): { w: Weight; values: Float32Array } {
  if (kind === 'f32') return { w: Weight.fromF32(data, shape), values: data };
  if (kind === 'bf16') {
    const h = new Uint16Array(data.length);
    native.fromF32(data, 2, h);
    const bytes = new Uint8Array(h.buffer);
    const values = new Float32Array(data.length);
    for (let i = 0; i < data.length; i++) values[i] = reference.readFloat(bytes, 2, i);
    return { w: Weight.fromTensor(new Tensor('BF16', shape, bytes)), values };
  }
  // MLX 4-bit with bf16 scales/biases, as mlx-community checkpoints store them.
  const q = QuantizedWeight.quantize(data, shape, { bits: 4, groupSize: group }, 'BF16');
  const values = reference.dequantize(q.packed.bytes, q.scales.bytes, q.biases.bytes, 2, shape[0] * shape[1], shape[2], 4, group);
  return { w: q.weight, values };
}

export interface Experts {
  glu: SwitchGLU;
  /** Decoded values: gate/up [E, I, H], down [E, H, I]. */
  gate: Float32Array;
  up: Float32Array;
  down: Float32Array;
  E: number;
  H: number;
  I: number;
}

/** Random experts; fused packs [gate_e; up_e] per expert into one [E, 2I, H] weight. */
export function makeExperts(o: { E: number; H: number; I: number; kind: Storage; fused: boolean; act: Activation; seed: number; group?: number }): Experts {
  const { E, H, I } = o;
  const r = rng(o.seed);
  const g = uniform(E * I * H, r, 0.15), u = uniform(E * I * H, r, 0.15), d = uniform(E * H * I, r, 0.15);
  const dn = makeWeight(d, [E, H, I], o.kind, o.group);
  if (!o.fused) {
    const gw = makeWeight(g, [E, I, H], o.kind, o.group), uw = makeWeight(u, [E, I, H], o.kind, o.group);
    return { glu: new SwitchGLU({ gate: gw.w, up: uw.w, down: dn.w }, o.act), gate: gw.values, up: uw.values, down: dn.values, E, H, I };
  }
  const gu = new Float32Array(E * 2 * I * H);
  for (let e = 0; e < E; e++) {
    gu.set(g.subarray(e * I * H, (e + 1) * I * H), e * 2 * I * H);
    gu.set(u.subarray(e * I * H, (e + 1) * I * H), e * 2 * I * H + I * H);
  }
  const guw = makeWeight(gu, [E, 2 * I, H], o.kind, o.group);
  const gate = new Float32Array(E * I * H), up = new Float32Array(E * I * H);
  for (let e = 0; e < E; e++) {
    gate.set(guw.values.subarray(e * 2 * I * H, e * 2 * I * H + I * H), e * I * H);
    up.set(guw.values.subarray(e * 2 * I * H + I * H, (e + 1) * 2 * I * H), e * I * H);
  }
  return { glu: new SwitchGLU({ gateUp: guw.w, down: dn.w }, o.act), gate, up, down: dn.values, E, H, I };
}

const ACT: Record<Activation, (v: number) => number> = { silu: reference.unary.silu, gelu_tanh: reference.unary.geluTanh };

/** y_t = Σ_r w_tr · down_e(act(gate_e x_t) ⊙ up_e x_t), all in float64. */
export function naiveSwitchGLU(ex: Experts, act: Activation, x: Float32Array, T: number, ids: Int32Array, w: Float32Array): Float64Array {
  const { H, I } = ex;
  const k = ids.length / T;
  const y = new Float64Array(T * H);
  const h = new Float64Array(I);
  for (let t = 0; t < T; t++)
    for (let r = 0; r < k; r++) {
      const e = ids[t * k + r]!;
      for (let i = 0; i < I; i++) {
        let a = 0, b = 0;
        const o = (e * I + i) * H;
        for (let c = 0; c < H; c++) {
          a += ex.gate[o + c]! * x[t * H + c]!;
          b += ex.up[o + c]! * x[t * H + c]!;
        }
        h[i] = ACT[act](a) * b;
      }
      for (let n = 0; n < H; n++) {
        let s = 0;
        const o = (e * H + n) * I;
        for (let i = 0; i < I; i++) s += ex.down[o + i]! * h[i]!;
        y[t * H + n] += w[t * k + r]! * s;
      }
    }
  return y;
}

/** max |a − b| / max |b|. */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0, m = 0;
  for (let i = 0; i < b.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    m = Math.max(m, Math.abs(b[i]!));
  }
  return m === 0 ? d : d / m;
}
