// Resident weight memory: the arena's allocations are aligned and disjoint, placing copies bytes exactly
// and in place (an Embedding and its tied head read one copy), a copy out of a checkpoint's file mapping
// releases the source pages without changing what the old view reads, and the placement switch refuses
// unknown values. Model outputs do not depend on the placement (engine/test/random.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  Embedding, MlxcelError, QuantizedWeight, SafetensorsFile, Tensor, WeightArena, placeWeight, setWeightPlacement,
  weightPlacement, writeSafetensors, type WeightPlacement,
} from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'mlxcel-wm-'));
const initial: WeightPlacement = weightPlacement();
afterEach(() => setWeightPlacement(initial));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 131 + seed * 17) & 255);

describe('WeightArena', () => {
  it('hands out 64-byte aligned, disjoint, zeroed ranges; large ones get their own mapping', () => {
    const a = new WeightArena();
    const parts = [1, 63, 64, 1000, 4096, 5 << 20, 17 << 20, 3].map((n) => a.alloc(n));
    const all = (p: Uint8Array, v: number) => p.indexOf(v === 0 ? 1 : 0) === -1 && p.findIndex((b) => b !== v) === -1;
    for (const p of parts) {
      expect(p.byteOffset % 64).toBe(0);
      expect(p.length < 1 << 20 ? all(p, 0) : p[0] === 0 && p[p.length - 1] === 0).toBe(true);
      expect(a.owns(p)).toBe(true);
    }
    parts.forEach((p, i) => p.fill(i + 1));
    parts.forEach((p, i) => expect([p[0], p[p.length - 1], p[p.length >> 1]]).toEqual([i + 1, i + 1, i + 1]));
    expect(parts[6]!.buffer).not.toBe(parts[5]!.buffer); // 17 MiB >= a quarter chunk: a mapping of its own
    expect(() => a.alloc(-1)).toThrow(MlxcelError);
  });

  it('place copies bytes exactly, and returns memory it already owns unchanged', () => {
    const a = new WeightArena();
    const src = bytes(10_000, 1);
    const dst = a.place(src.subarray(3, 9003));
    expect(dst).toEqual(src.subarray(3, 9003));
    expect(dst.buffer).not.toBe(src.buffer);
    const again = a.place(dst);
    expect(again.buffer).toBe(dst.buffer);
    expect(again.byteOffset).toBe(dst.byteOffset);
    expect(a.bytes).toBe(9000);
  });

  it('a copy out of a file mapping leaves the mapping reading the same bytes (its pages are only released)', () => {
    const n = 3 << 20; // several whole pages, so there is something to release
    const w = new Uint8Array(n);
    for (let i = 0; i < n; i++) w[i] = (i * 2654435761) >>> 24;
    writeSafetensors(join(dir, 'w.safetensors'), { w: new Tensor('U8', [n], w) });
    const f = SafetensorsFile.open(join(dir, 'w.safetensors'));
    const view = f.get('w').bytes;
    const copy = new WeightArena().place(view);
    const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
    expect(same(copy, w)).toBe(true);
    expect(same(view, w)).toBe(true); // read again after the release: faulted back in from the file
  });
});

describe('placeWeight', () => {
  const quantized = () => {
    const rows = 8, cols = 64;
    const data = Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i));
    return QuantizedWeight.quantize(data, [rows, cols], { bits: 4, groupSize: 32 }, 'BF16').weight;
  };

  it('resident: moves codes, scales and biases in place, keeping every byte; holders share the copy', () => {
    setWeightPlacement('resident');
    const w = quantized();
    const copy = (v: unknown) => new Uint8Array((v as Uint8Array).slice());
    const before = { d: copy(w.native.data), s: copy(w.native.scales), b: copy(w.native.biases) };
    const original = w.native.data;
    const table = new Embedding(w);
    const head = table.asLinear();
    const ref = w.dequantize();
    placeWeight(w);
    expect(w.native.data).not.toBe(original);
    expect(copy(w.native.data)).toEqual(before.d);
    expect(copy(w.native.scales)).toEqual(before.s);
    expect(copy(w.native.biases)).toEqual(before.b);
    expect(head.weight.native.data).toBe(table.weight.native.data);
    expect(w.dequantize()).toEqual(ref);
    const data = w.native.data;
    placeWeight(w); // already resident: nothing moves
    expect(w.native.data).toBe(data);
  });

  it('mapped: leaves the weight where it is', () => {
    setWeightPlacement('mapped');
    const w = quantized();
    const data = w.native.data;
    placeWeight(w);
    expect(w.native.data).toBe(data);
  });

  it('refuses an unknown placement, naming it', () => {
    expect(() => setWeightPlacement('huge' as WeightPlacement)).toThrow(/weight placement must be "resident" or "mapped", got "huge"/);
  });
});
