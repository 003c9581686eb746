/**
 * Phi-3-small's fused query_key_value output is grouped per KV head (docs/architecture/phi3small.md §2.1): group g holds
 * [q head g·r, …, q head g·r + r − 1, k head g, v head g], r = nH / nKV, each D wide. (Phi-3 dense
 * instead stores all of Q, then K, then V.) Returns q [M, nH·D], k and v [M, nKV·D].
 */
import { floats } from '@mlxcel/tensor';

export function splitGroupedQkv(x: Float32Array, M: number, nHeads: number, nKvHeads: number, D: number): { q: Float32Array; k: Float32Array; v: Float32Array } {
  const r = nHeads / nKvHeads;
  const group = (r + 2) * D, width = nKvHeads * group;
  const q = floats(M * nHeads * D), k = floats(M * nKvHeads * D), v = floats(M * nKvHeads * D);
  for (let m = 0; m < M; m++) {
    for (let g = 0; g < nKvHeads; g++) {
      const src = m * width + g * group;
      q.set(x.subarray(src, src + r * D), (m * nHeads + g * r) * D);
      k.set(x.subarray(src + r * D, src + (r + 1) * D), (m * nKvHeads + g) * D);
      v.set(x.subarray(src + (r + 1) * D, src + group), (m * nKvHeads + g) * D);
    }
  }
  return { q, k, v };
}
