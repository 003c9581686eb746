/** The Phi-3-small block-sparse visibility rule (docs/architecture/phi3small.md §4.3) and its mask builder. */
import { describe, expect, it } from 'vitest';
import { blockSparseMask, blockSparseVisible, type BlockSparseSpec } from '../src/index.js';

// Phi-3-small-8k: B = 64, Lb = 16, V = 8, nH = 32 ⇒ σ = 1.
const REAL: BlockSparseSpec = { blockSize: 64, localBlocks: 16, vertStride: 8, nHeads: 32, homoHeads: false };

function farBlocks(s: BlockSparseSpec, h: number, i: number): number[] {
  const out: number[] = [];
  const bi = Math.floor(i / s.blockSize);
  for (let bj = 0; bj <= bi - s.localBlocks; bj++) if (blockSparseVisible(s, h, i, bj * s.blockSize)) out.push(bj);
  return out;
}

describe('blockSparseVisible', () => {
  const i = 40 * 64 + 5; // query in block 40: local blocks 25..40
  it('sees its own block and the 15 previous ones, causally', () => {
    for (let h = 0; h < 32; h++) {
      expect(blockSparseVisible(REAL, h, i, 25 * 64)).toBe(true);
      expect(blockSparseVisible(REAL, h, i, i)).toBe(true);
      expect(blockSparseVisible(REAL, h, i, i + 1)).toBe(false);
    }
  });
  it('beyond the window head h sees blocks ≡ 7 − (h mod 8) (mod 8)', () => {
    expect(farBlocks(REAL, 0, i)).toEqual([7, 15, 23]);
    expect(farBlocks(REAL, 1, i)).toEqual([6, 14, 22]);
    expect(farBlocks(REAL, 7, i)).toEqual([0, 8, 16, 24]);
    expect(farBlocks(REAL, 8, i)).toEqual(farBlocks(REAL, 0, i));
    expect(farBlocks(REAL, 15, i)).toEqual(farBlocks(REAL, 7, i));
  });
  it('homogeneous pattern: every head sees blocks ≡ V − 1 (mod V)', () => {
    const homo = { ...REAL, homoHeads: true };
    for (const h of [0, 3, 31]) expect(farBlocks(homo, h, i)).toEqual([7, 15, 23]);
  });
  it('σ = floor(V / nH) when there are fewer heads than the stride', () => {
    const s = { ...REAL, nHeads: 2, vertStride: 8 }; // σ = 4: head 1 shifted by 4 blocks
    expect(farBlocks(s, 0, i)).toEqual([7, 15, 23]);
    expect(farBlocks(s, 1, i)).toEqual([3, 11, 19]);
  });
});

describe('blockSparseMask', () => {
  const S: BlockSparseSpec = { blockSize: 4, localBlocks: 2, vertStride: 3, nHeads: 3, homoHeads: false };

  it('is null while every query is inside its local window (positions < Lb·B)', () => {
    const q = Int32Array.from([0, 1, 2, 7]);
    const k = Int32Array.from([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(blockSparseMask(S, q, k)).toBeNull();
  });

  it('equals the rule for every (head, query, slot), with unordered and empty slots', () => {
    const q = Int32Array.from([8, 13, 21, 30]);
    const k = Int32Array.from([5, -1, 0, 31, 12, 3, 29, 17, 8, 22, 30, 1, -1, 9]);
    const mask = blockSparseMask(S, q, k)!;
    expect(mask.length).toBe(3 * q.length * k.length);
    let visible = 0;
    for (let h = 0; h < 3; h++)
      for (let t = 0; t < q.length; t++)
        for (let n = 0; n < k.length; n++) {
          const want = k[n]! >= 0 && blockSparseVisible(S, h, q[t]!, k[n]!);
          expect(mask[(h * q.length + t) * k.length + n]).toBe(want ? 1 : 0);
          if (want) visible++;
        }
    expect(visible).toBeGreaterThan(0);
  });
});
