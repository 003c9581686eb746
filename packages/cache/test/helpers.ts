/**
 * Test helpers: a seeded PRNG and a naive float64 attention that implements every visibility rule
 * from its definition (independent of the kernel's tiling, skipping and split-K).
 */
import type { BlockSparse } from '../src/index.js';

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

/** Uniform values in [-scale, scale). */
export function randArray(n: number, seed: number, scale = 1): Float32Array {
  const r = rng(seed);
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (r() * 2 - 1) * scale;
  return a;
}

export interface NaiveOptions {
  q: Float32Array;
  nQ: number;
  nHeads: number;
  headDim: number;
  vDim: number;
  qPos: Int32Array;
  /** Row layout [nKv, nKvHeads, headDim] / [nKv, nKvHeads, vDim]. */
  k: Float32Array;
  v: Float32Array;
  kPos: Int32Array;
  nKvHeads: number;
  scale: number;
  softcap?: number;
  causal?: boolean;
  window?: number;
  blockSparse?: BlockSparse;
  spans?: Int32Array;
  mask?: Uint8Array;
  maskHeads?: number;
}

export function visible(o: NaiveOptions, i: number, h: number, j: number): boolean {
  const kp = o.kPos[j]!, qp = o.qPos[i]!;
  if (kp < 0) return false;
  let base = true;
  if ((o.causal ?? true) && kp > qp) base = false;
  if (o.window && qp - kp >= o.window) base = false;
  if (o.blockSparse) {
    const { blockSize: B, localBlocks: L, vertStride: V, headStep = 0 } = o.blockSparse;
    const bi = Math.floor(qp / B), bj = Math.floor(kp / B);
    if (!(bi - bj < L || (bj + h * headStep + 1) % V === 0)) base = false;
  }
  if (!base && o.spans)
    for (let s = 0; s < o.spans.length; s += 2)
      if (qp >= o.spans[s]! && qp < o.spans[s + 1]! && kp >= o.spans[s]! && kp < o.spans[s + 1]!) base = true;
  if (!base) return false;
  if (o.mask) {
    const mh = o.maskHeads ?? 1;
    const nKv = o.kPos.length;
    if (!o.mask[((mh === 1 ? 0 : h) * o.nQ + i) * nKv + j]) return false;
  }
  return true;
}

/** out [nQ, nHeads, vDim], float64 accumulation; a query that sees nothing gives zeros. */
export function naiveAttention(o: NaiveOptions): Float32Array {
  const { nQ, nHeads, headDim: D, vDim: DV, nKvHeads } = o;
  const g = nHeads / nKvHeads;
  const out = new Float32Array(nQ * nHeads * DV);
  const nKv = o.kPos.length;
  for (let i = 0; i < nQ; i++)
    for (let h = 0; h < nHeads; h++) {
      const kvh = Math.floor(h / g);
      const sc: number[] = [], js: number[] = [];
      for (let j = 0; j < nKv; j++) {
        if (!visible(o, i, h, j)) continue;
        let s = 0;
        for (let d = 0; d < D; d++) s += o.q[(i * nHeads + h) * D + d]! * o.k[(j * nKvHeads + kvh) * D + d]!;
        s *= o.scale;
        if (o.softcap) s = o.softcap * Math.tanh(s / o.softcap);
        sc.push(s);
        js.push(j);
      }
      if (!sc.length) continue;
      const m = Math.max(...sc);
      const p = sc.map((s) => Math.exp(s - m));
      const z = p.reduce((a, b) => a + b, 0);
      for (let d = 0; d < DV; d++) {
        let acc = 0;
        for (let c = 0; c < js.length; c++) acc += p[c]! * o.v[(js[c]! * nKvHeads + kvh) * DV + d]!;
        out[(i * nHeads + h) * DV + d] = acc / z;
      }
    }
  return out;
}

/** max |a - b| / max(1, max |b|). */
export function relErr(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Infinity;
  let e = 0, m = 1;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (!(d <= e)) e = Number.isNaN(d) ? Infinity : d;
    m = Math.max(m, Math.abs(b[i]!));
  }
  return e / m;
}

export function bitsEqual(a: ArrayBufferView, b: ArrayBufferView): boolean {
  if (a.byteLength !== b.byteLength) return false;
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength), y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}
