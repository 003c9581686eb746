/**
 * Builders for the structured visibility rules the kernel evaluates itself (no dense masks needed).
 */
import { MlxcelError } from '@mlxcel/tensor';
import type { BlockSparse } from './types.js';

/** The Phi-3-small config keys that define its block-sparse layers. */
export interface Phi3SmallSparseConfig {
  blocksparse_block_size: number;
  blocksparse_num_local_blocks: number;
  blocksparse_vert_stride: number;
  blocksparse_homo_head_pattern?: boolean;
  num_attention_heads: number;
}

/**
 * docs/architecture/phi3small.md §4.3: local window of `num_local_blocks` blocks plus every key block with
 * (kb + h·σ + 1) mod vert_stride = 0, σ = max(1, floor(vert_stride / nHeads)) for per-head patterns,
 * 0 for a homogeneous pattern.
 */
export function phi3SmallBlockSparse(cfg: Phi3SmallSparseConfig): BlockSparse {
  const B = cfg.blocksparse_block_size, L = cfg.blocksparse_num_local_blocks, V = cfg.blocksparse_vert_stride, nH = cfg.num_attention_heads;
  for (const [k, x] of [['blocksparse_block_size', B], ['blocksparse_num_local_blocks', L], ['blocksparse_vert_stride', V], ['num_attention_heads', nH]] as const)
    if (!Number.isInteger(x) || x < 1) throw new MlxcelError('E_CONFIG', `phi3small block-sparse: ${k} must be a positive integer, got ${x}`);
  const headStep = cfg.blocksparse_homo_head_pattern ? 0 : Math.max(1, Math.floor(V / nH));
  return { blockSize: B, localBlocks: L, vertStride: V, headStep };
}

/**
 * Bidirectional spans from per-token modality types (0 = text, anything else = one multimodal item):
 * each maximal run of the same nonzero type becomes one [start, end) span, positions offset by `pos0`.
 */
export function spansFromTokenTypes(types: ArrayLike<number>, pos0 = 0): Int32Array {
  const out: number[] = [];
  let i = 0;
  while (i < types.length) {
    const t = types[i]!;
    let j = i + 1;
    while (j < types.length && types[j] === t) j++;
    if (t !== 0) out.push(pos0 + i, pos0 + j);
    i = j;
  }
  return Int32Array.from(out);
}
