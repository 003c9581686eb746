import { afterEach, describe, expect, it } from 'vitest';
import { ARENA_KEEP_BYTES, ARENA_MIN_BYTES, floats, LARGE_ARRAY_BYTES, layerArenaBytes, outputFloats, persistentFloats, setArenaPoison, withLayerArenas } from '../src/index.js';

const BIG = LARGE_ARRAY_BYTES / 4; // floats in the smallest array that leaves the JS heap

afterEach(() => setArenaPoison(false));

describe('floats', () => {
  it('is zeroed below and above the large-array threshold', () => {
    for (const n of [7, BIG - 1, BIG, 3 * BIG + 5]) {
      const a = floats(n);
      expect(a.length).toBe(n);
      expect(a.every((v) => v === 0)).toBe(true);
    }
  });
});

describe('layer arenas', () => {
  it('keep a layer\'s arrays through the next layer and reuse their memory after that', () => {
    const seen: Float32Array[] = [];
    withLayerArenas((nextLayer) => {
      for (let l = 0; l < 4; l++) {
        nextLayer();
        const a = outputFloats(BIG);
        a.fill(l + 1);
        if (l > 0) expect(seen[l - 1]!.every((v) => v === l)).toBe(true); // the previous layer's output is intact
        seen.push(a);
      }
    });
    // Layer 2 took the memory of layer 0 (same arena, reset), layer 3 that of layer 1.
    expect(seen[2]!.buffer).toBe(seen[0]!.buffer);
    expect(seen[2]!.byteOffset).toBe(seen[0]!.byteOffset);
    expect(seen[3]!.buffer).toBe(seen[1]!.buffer);
    expect(seen[0]!.buffer).not.toBe(seen[1]!.buffer);
    expect(layerArenaBytes()).toBeGreaterThanOrEqual(2 * BIG * 4);
  });

  it('take arrays from ARENA_MIN_BYTES on inside a layer loop (a batched decode step\'s rows), smaller ones from the heap', () => {
    const n = ARENA_MIN_BYTES / 4;
    expect(n * 4).toBeLessThan(LARGE_ARRAY_BYTES);
    const got: Float32Array[] = [];
    const small: Float32Array[] = [];
    withLayerArenas((nextLayer) => {
      for (let l = 0; l < 3; l++) {
        nextLayer();
        got.push(outputFloats(n));
        small.push(outputFloats(n - 1));
      }
    });
    expect(got[2]!.buffer).toBe(got[0]!.buffer); // layer 2 reused layer 0's arena memory
    expect(got[2]!.byteOffset).toBe(got[0]!.byteOffset);
    expect(got[0]!.buffer.byteLength).toBeGreaterThan(n * 4); // a view into an arena chunk
    for (const a of small) expect(a.buffer.byteLength).toBe((n - 1) * 4); // its own heap array
    // Outside a layer loop the same size is an ordinary array.
    expect(outputFloats(n).buffer.byteLength).toBe(n * 4);
  });

  it('clear reused memory for floats (outputFloats may leave it)', () => {
    withLayerArenas((nextLayer) => {
      nextLayer();
      outputFloats(BIG).fill(5);
      nextLayer();
      nextLayer(); // back in the first arena
      expect(floats(BIG).every((v) => v === 0)).toBe(true);
    });
  });

  it('with poisoning, a value read two layers later is NaN, and small arrays use the arena too', () => {
    setArenaPoison(true);
    withLayerArenas((nextLayer) => {
      nextLayer();
      const small = outputFloats(16).fill(1), big = outputFloats(BIG).fill(1);
      nextLayer();
      expect(small[0]).toBe(1);
      nextLayer();
      expect(Number.isNaN(small[0])).toBe(true);
      expect(Number.isNaN(big[BIG - 1])).toBe(true);
    });
  });

  it('give a nested layer loop its own arenas and leave the outer layer\'s arrays alone', () => {
    withLayerArenas((outerNext) => {
      outerNext();
      const outer = outputFloats(BIG).fill(3);
      withLayerArenas((innerNext) => {
        for (let l = 0; l < 3; l++) {
          innerNext();
          outputFloats(BIG).fill(-1);
        }
      });
      expect(outer.every((v) => v === 3)).toBe(true);
      // After the inner loop the outer scope is current again.
      outerNext();
      outerNext();
      expect(outputFloats(BIG).buffer).toBe(outer.buffer);
    });
  });

  it('are not used before the first layer, outside a layer loop, or by persistentFloats', () => {
    withLayerArenas((nextLayer) => {
      const before = outputFloats(BIG).fill(2);
      nextLayer();
      const kept = persistentFloats(BIG).fill(4);
      nextLayer();
      nextLayer();
      outputFloats(BIG).fill(9);
      expect(before.every((v) => v === 2)).toBe(true);
      expect(kept.every((v) => v === 4)).toBe(true);
    });
    const outside = outputFloats(BIG).fill(6);
    withLayerArenas((nextLayer) => {
      for (let l = 0; l < 3; l++) {
        nextLayer();
        outputFloats(BIG).fill(0);
      }
    });
    expect(outside.every((v) => v === 6)).toBe(true);
  });

  it('keep at most ARENA_KEEP_BYTES between loops, and arrays of dropped chunks stay valid', () => {
    let last: Float32Array | null = null;
    withLayerArenas((nextLayer) => {
      for (let l = 0; l < 2; l++) {
        nextLayer();
        for (let i = 0; i < 6; i++) (last = outputFloats((64 << 20) / 4)).fill(l + 1); // 384 MiB per layer
      }
    });
    expect(layerArenaBytes()).toBeLessThanOrEqual(ARENA_KEEP_BYTES);
    expect(last![last!.length - 1]).toBe(2);
  });
});
