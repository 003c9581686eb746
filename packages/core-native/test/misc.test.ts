// argmax / top-k, dtype conversion (f16 / bf16 <-> f32) and the MLX affine quantizer, checked exactly
// against the independent references of helpers.ts; plus aligned buffers, file mapping and the bandwidth
// probe. (These entry points are not per-ISA kernels, except streamSum, which is checked per variant.)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';
import {
  bf16Decode, bf16Encode, bitsF32, codeAt, f16Decode, f16Encode, f32Bits, mlxQuantize, randF32, rng, VARIANTS,
} from './helpers.js';

const initialIsa = native.cpuInfo().isa;
afterAll(() => native.setIsa(initialIsa));

describe('argmax and topk', () => {
  it('argmax: per row, the first maximum wins, NaN never wins, -inf rows give 0', () => {
    const x = Float32Array.from([1, 5, 5, 2, /**/ -1, -3, -0.5, -0.5, /**/ NaN, 2, NaN, 1, /**/ -Infinity, -Infinity, -Infinity, -Infinity]);
    const out = new Int32Array(4);
    native.argmax(x, 4, 4, out);
    expect(Array.from(out)).toEqual([1, 2, 1, 0]);
    const big = randF32(3 * 50_001, 1);
    const o = new Int32Array(3);
    native.argmax(big, 3, 50_001, o);
    for (let r = 0; r < 3; r++) {
      let best = 0;
      for (let i = 1; i < 50_001; i++) if (big[r * 50_001 + i]! > big[r * 50_001 + best]!) best = i;
      expect(o[r]).toBe(best);
    }
  });

  it('topk: the k largest, descending, ties broken by the lower index', () => {
    const x = randF32(1000, 2, -10, 10);
    x[17] = x[900] = 50; // a tie at the top
    for (const k of [1, 2, 5, 1000]) {
      const idx = new Int32Array(k), val = new Float32Array(k);
      native.topk(x, k, idx, val);
      const order = Array.from(x.keys()).sort((a, b) => x[b]! - x[a]! || a - b).slice(0, k);
      expect(Array.from(idx)).toEqual(order);
      expect(Array.from(val)).toEqual(order.map((i) => x[i]!));
    }
  });
});

describe('dtype conversion', () => {
  it('toF32 decodes every f16 bit pattern exactly (subnormals, inf, NaN, -0)', () => {
    const all = Uint16Array.from({ length: 65536 }, (_, i) => i);
    const out = new Float32Array(65536);
    native.toF32(all, 1, 65536, out);
    for (let h = 0; h < 65536; h++) {
      const e = f16Decode(h);
      if (Number.isNaN(e)) expect(Number.isNaN(out[h]!)).toBe(true);
      else expect(Object.is(out[h], e) || (e === 0 && out[h] === 0 && Object.is(out[h], e))).toBe(true);
    }
    expect(out[0x0001]).toBe(2 ** -24); // smallest subnormal
    expect(out[0x03ff]).toBe(1023 * 2 ** -24); // largest subnormal
    expect(out[0x7c00]).toBe(Infinity);
    expect(out[0xfc00]).toBe(-Infinity);
    expect(Object.is(out[0x8000], -0)).toBe(true);
  });

  it('toF32 decodes every bf16 bit pattern exactly, from an unaligned source', () => {
    const bytes = new Uint8Array(2 * 65536 + 1);
    const dv = new DataView(bytes.buffer);
    for (let h = 0; h < 65536; h++) dv.setUint16(1 + 2 * h, h, true);
    const out = new Float32Array(65536);
    native.toF32(bytes.subarray(1), 2, 65536, out);
    for (let h = 0; h < 65536; h++) {
      const e = bf16Decode(h);
      if (Number.isNaN(e)) expect(Number.isNaN(out[h]!)).toBe(true);
      else expect(f32Bits(out[h]!)).toBe(f32Bits(e));
    }
  });

  it('fromF32 to f16: round to nearest even incl. subnormal results, overflow to inf, NaN stays NaN', () => {
    const special = [
      0, -0, 1, -1, 65504, 65519.99, 65520, 1e6, -1e6, Infinity, -Infinity, NaN,
      2 ** -24, 2 ** -25, 2 ** -25 * 1.0001, 3 * 2 ** -25, 2 ** -26, 1e-10, 6.1e-5, 2 ** -14, 2 ** -14 - 2 ** -25,
      1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -11 + 2 ** -20, 2049, 2051, 4097, 0.1, 1 / 3,
    ];
    const r = rng(9);
    const vals = [...special, ...Array.from({ length: 20000 }, () => (r() - 0.5) * 2 ** (Math.floor(r() * 40) - 28))];
    const src = Float32Array.from(vals);
    const out = new Uint16Array(src.length);
    native.fromF32(src, 1, out);
    for (let i = 0; i < src.length; i++) {
      const e = f16Encode(src[i]!);
      if (Number.isNaN(src[i]!)) expect(out[i]! & 0x7fff).toBeGreaterThan(0x7c00);
      else if (out[i] !== e) throw new Error(`f16(${src[i]}) = 0x${out[i]!.toString(16)}, expected 0x${e.toString(16)}`);
    }
  });

  it('fromF32 to bf16: round to nearest, ties to even, NaN stays NaN', () => {
    const ties = [0x3f808000, 0x3f818000, 0xbf808000, 0x7f7f8000, 0x00008000, 0x00018000].map(bitsF32);
    const r = rng(4);
    const vals = [...ties, 0, -0, 1, Infinity, -Infinity, NaN, 3.4e38, 1e-40, ...Array.from({ length: 20000 }, () => bitsF32(Math.floor(r() * 2 ** 32)))];
    const src = Float32Array.from(vals);
    const out = new Uint16Array(src.length);
    native.fromF32(src, 2, out);
    expect(Array.from(out.subarray(0, 6))).toEqual([0x3f80, 0x3f82, 0xbf80, 0x7f80, 0x0000, 0x0002]);
    for (let i = 0; i < src.length; i++) {
      if (Number.isNaN(src[i]!)) {
        expect(Number.isNaN(bf16Decode(out[i]!))).toBe(true);
        continue;
      }
      if (out[i] !== bf16Encode(src[i]!)) throw new Error(`bf16(${src[i]}) = 0x${out[i]!.toString(16)}, expected 0x${bf16Encode(src[i]!).toString(16)}`);
    }
  });
});

describe('MLX affine quantize', () => {
  // Groups chosen to hit every branch of the quantizer: |min| > |max| (edge = min, positive scale),
  // |max| >= |min| (edge = max, negated scale), constant groups (scale clamped to 1e-7), all-zero groups
  // (q0 = 0, bias 0), a group whose edge rounds to code 0, and plain random ones.
  function testMatrix(rows: number, cols: number, group: number, seed: number): Float32Array {
    const w = randF32(rows * cols, seed, -1, 1);
    const r = rng(seed + 1);
    for (let g = 0; g < (rows * cols) / group; g++) {
      const kind = g % 7;
      const base = g * group;
      for (let i = 0; i < group; i++) {
        const u = r();
        if (kind === 0) w[base + i] = -2 + u; // mostly negative: |min| > |max|
        else if (kind === 1) w[base + i] = 3 * u; // mostly positive
        else if (kind === 2) w[base + i] = 0.75; // constant
        else if (kind === 3) w[base + i] = 0; // zeros
        else if (kind === 4) w[base + i] = 1e-9 * u; // tiny range
      }
    }
    return w;
  }

  for (const bits of [2, 3, 4, 5, 6, 8])
    it(`${bits}-bit, groups 32/64/128: packed words, scales and biases bit-exact vs the reference quantizer`, () => {
      for (const group of [32, 64, 128]) {
        const rows = 9, cols = group * 5;
        const w = testMatrix(rows, cols, group, bits * 1000 + group);
        const ref = mlxQuantize(w, rows, cols, bits, group);
        const words = new Uint32Array((rows * cols * bits) / 32).fill(0xdeadbeef);
        const s = new Float32Array((rows * cols) / group), b = new Float32Array(s.length);
        native.quantize(w, rows, cols, bits, group, words, s, b);
        for (let i = 0; i < s.length; i++) {
          if (f32Bits(s[i]!) !== f32Bits(ref.scales[i]!) || f32Bits(b[i]!) !== f32Bits(ref.biases[i]!))
            throw new Error(`q${bits} g${group} group ${i}: scale ${s[i]}/${ref.scales[i]} bias ${b[i]}/${ref.biases[i]}`);
        }
        for (let i = 0; i < words.length; i++)
          if (words[i] !== ref.words[i]) throw new Error(`q${bits} g${group} word ${i}: 0x${words[i]!.toString(16)} vs 0x${ref.words[i]!.toString(16)}`);
        expect(s.some((v) => v < 0)).toBe(true); // negative scales occur
      }
    });

  for (const isa of VARIANTS)
    it(`dequantization round trip on [${isa}]: every element comes back as its group's nearest level`, () => {
      // The quantizer rounds (w - b) / s to the nearest code and clamps to [0, 2^bits - 1], so each
      // dequantized value must be the level b + s*k closest to w (within half a step when w lies inside
      // the levels; rescaling s to keep the edge exact can leave the far edge past the top level).
      native.setIsa(isa);
      for (const bits of [2, 3, 4, 5, 6, 8])
        for (const group of [32, 64, 128]) {
          const rows = 5, cols = group * 3;
          const w = randF32(rows * cols, bits + group, -3, 3);
          const words = new Uint32Array((rows * cols * bits) / 32);
          const s = new Float32Array((rows * cols) / group), b = new Float32Array(s.length);
          native.quantize(w, rows, cols, bits, group, words, s, b);
          const out = new Float32Array(rows * cols);
          native.gather(Int32Array.from({ length: rows }, (_, i) => i), {
            dtype: 3, data: words, rows, cols, scales: s, biases: b, scaleDtype: 0, bits: bits as 4, groupSize: group as 64,
          }, out);
          const n = 2 ** bits - 1;
          for (let r = 0; r < rows; r++)
            for (let c = 0; c < cols; c++) {
              const g = r * (cols / group) + Math.floor(c / group);
              const v = w[r * cols + c]!;
              let best = Infinity;
              for (let k = 0; k <= n; k++) best = Math.min(best, Math.abs(b[g]! + s[g]! * k - v));
              const err = Math.abs(out[r * cols + c]! - v);
              if (!(err <= best + 1e-5 * Math.abs(s[g]!) + 1e-6))
                throw new Error(`${isa} q${bits} g${group} (${r}, ${c}): |err| ${err}, nearest level is ${best} away`);
              if (Math.abs(s[g]! * 0.5) + 1e-6 < err) expect(Math.abs((v - b[g]!) / s[g]!) > n || (v - b[g]!) / s[g]! < 0).toBe(true);
            }
        }
    });
});

describe('memory and the bandwidth probe', () => {
  it('alloc returns a zeroed, writable, 64-byte aligned buffer of the requested size', () => {
    for (const n of [0, 1, 63, 4096, 1 << 20]) {
      const ab = native.alloc(n);
      expect(ab.byteLength).toBe(n);
      const u8 = new Uint8Array(ab);
      expect(u8.every((v) => v === 0)).toBe(true);
      if (n) {
        u8[n - 1] = 7;
        expect(u8[n - 1]).toBe(7);
      }
    }
  });

  it('mmapFile maps a whole file read-only (writes stay private) and names the file when it cannot open it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mlxcel-mmap-'));
    try {
      const p = join(dir, 'data.bin');
      const content = Uint8Array.from({ length: 10_000 }, (_, i) => (i * 7) & 255);
      writeFileSync(p, content);
      const m = new Uint8Array(native.mmapFile(p));
      expect(Buffer.from(m).equals(Buffer.from(content))).toBe(true);
      m[0] = 99; // copy-on-write: the file is unchanged
      expect(new Uint8Array(native.mmapFile(p))[0]).toBe(0);
      writeFileSync(join(dir, 'empty.bin'), new Uint8Array(0));
      expect(native.mmapFile(join(dir, 'empty.bin')).byteLength).toBe(0);
      expect(() => native.mmapFile(join(dir, 'missing.bin'))).toThrow(/missing\.bin/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('releasePages hands whole pages of a view back to the OS without changing a value (file mappings, written pages, heap memory)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mlxcel-release-'));
    try {
      const p = join(dir, 'data.bin');
      const content = Uint8Array.from({ length: 1 << 20 }, (_, i) => (i * 2654435761) >>> 24);
      writeFileSync(p, content);
      const m = new Uint8Array(native.mmapFile(p));
      expect(Buffer.from(m).equals(Buffer.from(content))).toBe(true);
      m[5000] = content[5000]! ^ 1; // a private (copy-on-write) page: its data must survive too
      const view = m.subarray(100, m.length - 100);
      const advised = native.releasePages(view);
      if (process.platform === 'linux') {
        expect(advised).toBeGreaterThan(0);
        expect(advised % 4096).toBe(0);
        expect(advised).toBeLessThanOrEqual(view.byteLength); // only pages wholly inside the view
      }
      const want = Uint8Array.from(content);
      want[5000] = content[5000]! ^ 1;
      expect(Buffer.from(m).equals(Buffer.from(want))).toBe(true);
      const heap = Uint8Array.from(content);
      native.releasePages(heap);
      expect(Buffer.from(heap).equals(Buffer.from(content))).toBe(true);
      expect(native.releasePages(new Uint8Array(10))).toBe(0); // no whole page inside
      expect(() => native.releasePages(42 as never)).toThrow(TypeError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const isa of VARIANTS)
    it(`streamSum [${isa}]: the sum of the buffer's u32 words modulo 2^32, any length, any thread count`, () => {
      native.setIsa(isa);
      for (const n of [0, 1, 3, 17, 1000, (1 << 18) + 5]) {
        const words = Uint32Array.from({ length: n }, (_, i) => (i * 2654435761) >>> 0);
        let e = 0;
        for (const v of words) e = (e + v) % 2 ** 32;
        expect(native.streamSum(words)).toBe(e);
        // A trailing partial word is not counted.
        const bytes = new Uint8Array(words.byteLength + 3);
        bytes.set(new Uint8Array(words.buffer));
        bytes.fill(255, words.byteLength);
        expect(native.streamSum(bytes)).toBe(e);
      }
    });
});
