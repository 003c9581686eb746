/**
 * The tiled KV store: conversions and quantization checked against core-native's independent
 * fromF32/toF32 and MLX `quantize`; exported images in MLX packing; exact import/export; growth.
 */
import * as native from '@mlxcel/core-native';
import { describe, expect, it } from 'vitest';
import { storeFormat, TiledStore, type KvStorage } from '../src/index.js';
import { bitsEqual, randArray } from './helpers.js';

const H = 3, D = 64, DV = 32;

function store(storage: KvStorage, slots = 40): TiledStore {
  const s = new TiledStore(H, D, DV, storeFormat(storage, D, DV, storage === 'q8' || storage === 'k8v4' ? 32 : undefined));
  s.reserve(slots);
  return s;
}

/** MLX affine quantization of rows [n, cols] through core-native `quantize` (a separate implementation). */
function mlxQuantize(x: Float32Array, rows: number, cols: number, bits: number, group: number) {
  const words = new Uint32Array((rows * cols * bits) / 32);
  const scales = new Float32Array((rows * cols) / group), biases = new Float32Array((rows * cols) / group);
  native.quantize(x, rows, cols, bits, group, words, scales, biases);
  return { bytes: new Uint8Array(words.buffer), scales, biases };
}

/** [T, H, X] rows -> head-major [H, T, X]. */
function headMajor(x: Float32Array, T: number, X: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let t = 0; t < T; t++) for (let h = 0; h < H; h++) out.set(x.subarray((t * H + h) * X, (t * H + h + 1) * X), (h * T + t) * X);
  return out;
}

describe('TiledStore', () => {
  const T = 21;
  const k = randArray(T * H * D, 1, 3), v = randArray(T * H * DV, 2, 3);
  const slots = Int32Array.from({ length: T }, (_, i) => (i * 7) % 40); // scattered, across tiles
  const pos = Int32Array.from({ length: T }, (_, i) => 100 + i);

  it('f32 stores exactly', () => {
    const s = store('f32');
    s.write(slots, k, v, pos);
    const r = s.read(slots);
    expect(bitsEqual(r.k, k) && bitsEqual(r.v, v)).toBe(true);
    expect(Array.from(slots, (sl) => s.pos[sl])).toEqual(Array.from(pos));
  });

  for (const [storage, code] of [['f16', 1], ['bf16', 2]] as const)
    it(`${storage} rounds exactly as core-native fromF32 (round to nearest even)`, () => {
      const s = store(storage);
      s.write(slots, k, v, pos);
      const conv = (x: Float32Array) => {
        const h = new Uint16Array(x.length), back = new Float32Array(x.length);
        native.fromF32(x, code, h);
        native.toF32(h, code, x.length, back);
        return { h, back };
      };
      const r = s.read(slots);
      expect(bitsEqual(r.k, conv(k).back)).toBe(true);
      expect(bitsEqual(r.v, conv(v).back)).toBe(true);
      const im = s.exportImage(slots);
      expect(bitsEqual(im.k, conv(headMajor(k, T, D)).h)).toBe(true);
      expect(bitsEqual(im.v, conv(headMajor(v, T, DV)).h)).toBe(true);
    });

  it('f16 stores a finite value beyond its range as +-65504 (never an infinity); infinities and NaN stay', () => {
    // f16 is the default KV storage of the fast paths (engine defaultKvStorage): a stray large K or V
    // must not become an infinity that turns every attention score of the head into NaN.
    const s = store('f16');
    const kk = new Float32Array(H * D).fill(0.5), vv = new Float32Array(H * DV).fill(-0.25);
    kk[0] = 1e6; kk[1] = -70000; kk[2] = 65519; kk[3] = Infinity; kk[4] = NaN; kk[5] = 65504;
    vv[0] = -3e38; vv[1] = 1e5;
    s.write(Int32Array.of(3), kk, vv, Int32Array.of(0));
    const r = s.read(Int32Array.of(3));
    expect(Array.from(r.k.subarray(0, 7))).toEqual([65504, -65504, 65504, Infinity, NaN, 65504, 0.5]);
    expect(Array.from(r.v.subarray(0, 3))).toEqual([-65504, 65504, -0.25]);
    // bf16 has f32's range: nothing to saturate.
    const b = store('bf16');
    b.write(Int32Array.of(3), kk, vv, Int32Array.of(0));
    expect(b.read(Int32Array.of(3)).k[0]).toBe(999424); // 1e6 rounded to bf16's 8-bit mantissa
  });

  for (const [storage, vBits] of [['q8', 8], ['k8v4', 4]] as const)
    it(`${storage}: codes, scales and biases equal MLX quantize (K 8-bit, V ${vBits}-bit), exported in MLX packing`, () => {
      const s = store(storage);
      s.write(slots, k, v, pos);
      const im = s.exportImage(slots);
      const qk = mlxQuantize(headMajor(k, T, D), T * H, D, 8, 32);
      const qv = mlxQuantize(headMajor(v, T, DV), T * H, DV, vBits, 32);
      expect(bitsEqual(im.k, qk.bytes)).toBe(true);
      expect(bitsEqual(im.kScales!, qk.scales) && bitsEqual(im.kBiases!, qk.biases)).toBe(true);
      expect(bitsEqual(im.v, qv.bytes)).toBe(true);
      expect(im.v.length).toBe((T * H * DV * vBits) / 8);
      expect(bitsEqual(im.vScales!, qv.scales) && bitsEqual(im.vBiases!, qv.biases)).toBe(true);
      // Dequantized reads: scale * code + bias of those codes.
      const r = s.read(slots);
      const hk = headMajor(r.k, T, D);
      for (let row = 0; row < T * H; row++)
        for (let c = 0; c < D; c++) {
          const g = row * (D / 32) + Math.floor(c / 32);
          const want = Math.fround(Math.fround(qk.scales[g]! * qk.bytes[row * D + c]!) + qk.biases[g]!);
          expect(Math.abs(hk[row * D + c]! - want)).toBeLessThanOrEqual(Math.abs(want) * 1e-6 + 1e-7);
        }
      // Quantization error: within one step of the row's group scale (half a step plus edge clamping).
      for (let t = 0; t < T; t++)
        for (let h = 0; h < H; h++)
          for (let c = 0; c < DV; c++) {
            const step = Math.abs(im.vScales![(h * T + t) * (DV / 32) + (c >> 5)]!);
            const i = (t * H + h) * DV + c;
            expect(Math.abs(r.v[i]! - v[i]!)).toBeLessThanOrEqual(step + 1e-6);
          }
    });

  it('export / import moves exact bits between slots and stores (all formats)', () => {
    for (const st of ['f32', 'f16', 'bf16', 'q8', 'k8v4'] as KvStorage[]) {
      const a = store(st), b = store(st, 64);
      a.write(slots, k, v, pos);
      const im = a.exportImage(slots);
      const to = Int32Array.from({ length: T }, (_, i) => 63 - i);
      b.importImage(to, im);
      const back = b.exportImage(to);
      for (const key of ['k', 'v', 'kScales', 'kBiases', 'vScales', 'vBiases', 'pos'] as const)
        if (im[key]) expect(bitsEqual(back[key]!, im[key]!), `${st} ${key}`).toBe(true);
      expect(bitsEqual(b.read(to).v, a.read(slots).v), st).toBe(true);
    }
  });

  it('growing keeps every head block (head-major relayout)', () => {
    for (const st of ['f16', 'k8v4'] as KvStorage[]) {
      const s = store(st, 16);
      const few = Int32Array.from({ length: 16 }, (_, i) => i);
      s.write(few, k.subarray(0, 16 * H * D), v.subarray(0, 16 * H * DV), few);
      const before = s.exportImage(few);
      s.reserve(300);
      expect(s.capacity).toBe(304);
      const after = s.exportImage(few);
      for (const key of ['k', 'v', 'kScales', 'vScales'] as const) if (before[key]) expect(bitsEqual(after[key]!, before[key]!), `${st} ${key}`).toBe(true);
      expect(Array.from(s.pos.subarray(16, 20))).toEqual([-1, -1, -1, -1]);
    }
  });

  it('native store calls validate their arguments', () => {
    const s = store('q8');
    const d = s.desc();
    expect(s.capacity).toBe(48);
    expect(() => native.kvWrite(d, Int32Array.of(48), k, v)).toThrow(/outside the store/);
    expect(() => native.kvWrite({ ...d, capacity: 20 }, Int32Array.of(0), k, v)).toThrow(/multiple of 16/);
    expect(() => native.kvWrite(d, Int32Array.of(0, 1), new Float32Array(3), v)).toThrow(/k has 3 elements/);
    expect(() => native.kvWrite({ ...d, vBits: 3 as 4 }, Int32Array.of(0), k, v)).toThrow(/vBits/);
    expect(() => native.kvWrite({ ...d, k: new Uint8Array(5) }, Int32Array.of(0), k, v)).toThrow(/store.k/);
    expect(() => native.kvExport(d, Int32Array.of(0), { k: new Uint8Array(1), v: new Uint8Array(1) })).toThrow(/image.k/);
    expect(() => native.kvRead(d, new Int32Array(2) as never, new Float32Array(1), new Float32Array(1))).toThrow(/outK/);
    expect(() => s.importImage(Int32Array.of(0), { ...s.emptyImage(1), kScales: undefined })).toThrow(/kScales/);
  });
});

