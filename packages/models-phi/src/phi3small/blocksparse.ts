/**
 * Block-sparse attention visibility of Phi-3-small (docs/architecture/phi3small.md §4.3), on absolute positions:
 *
 *   visible(h, i, j) ⇔ j ≤ i ∧ ( bi − bj < Lb ∨ (bj + h·σ + 1) mod V = 0 ),  bi = ⌊i/B⌋, bj = ⌊j/B⌋
 *
 * σ = max(1, ⌊V / nH⌋) per head (heterogeneous pattern) and the h·σ term is 0 with
 * `blocksparse_homo_head_pattern`. Token-level causality is the kernel's (ANDed); this module only
 * produces the block part. Positions are absolute, so results do not depend on chunking.
 */
export interface BlockSparseSpec {
  blockSize: number;
  localBlocks: number;
  vertStride: number;
  nHeads: number;
  homoHeads: boolean;
}

/** Per-head offset σ·h of the vertical pattern. */
function headShift(s: BlockSparseSpec, h: number): number {
  return s.homoHeads ? 0 : h * Math.max(1, Math.floor(s.vertStride / s.nHeads));
}

/** The exact rule for one (head, query position, key position). */
export function blockSparseVisible(s: BlockSparseSpec, h: number, i: number, j: number): boolean {
  if (j > i || j < 0) return false;
  const bi = Math.floor(i / s.blockSize), bj = Math.floor(j / s.blockSize);
  return bi - bj < s.localBlocks || (bj + headShift(s, h) + 1) % s.vertStride === 0;
}

/**
 * Mask [nHeads, qPos.length, kPos.length] (1 = visible) for keys stored at slot positions `kPos`
 * (negative = empty slot), or null when every causal key is inside every query's local window
 * (always so while positions < Lb·B, docs/architecture/phi3small.md §4.3: sparse layers equal dense ones there).
 */
export function blockSparseMask(s: BlockSparseSpec, qPos: Int32Array, kPos: Int32Array): Uint8Array | null {
  const B = s.blockSize, Lb = s.localBlocks, V = s.vertStride, nH = s.nHeads;
  let maxQ = -1;
  for (let t = 0; t < qPos.length; t++) maxQ = Math.max(maxQ, qPos[t]!);
  if (Math.floor(maxQ / B) < Lb) return null; // bi − bj ≤ bi < Lb for every key j ≥ 0
  const Tq = qPos.length, N = kPos.length;
  const mask = new Uint8Array(nH * Tq * N);
  const kb = new Int32Array(N);
  for (let n = 0; n < N; n++) kb[n] = kPos[n]! >= 0 ? Math.floor(kPos[n]! / B) : -1;
  const shifts = Array.from({ length: nH }, (_, h) => headShift(s, h));
  for (let t = 0; t < Tq; t++) {
    const i = qPos[t]!, bi = Math.floor(i / B);
    for (let n = 0; n < N; n++) {
      const j = kPos[n]!, bj = kb[n]!;
      if (j < 0 || j > i) continue;
      if (bi - bj < Lb) {
        for (let h = 0; h < nH; h++) mask[(h * Tq + t) * N + n] = 1;
      } else {
        for (let h = 0; h < nH; h++) if ((bj + shifts[h]! + 1) % V === 0) mask[(h * Tq + t) * N + n] = 1;
      }
    }
  }
  return mask;
}
