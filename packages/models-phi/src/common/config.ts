/**
 * Config reads the three Phi architectures share, over models-core's ConfigReader (every failure a
 * ModelConfigError naming the key).
 */
import type { ConfigReader } from '@mlxcel/models-core';

/** Attention head geometry common to the family: nH % nKV == 0 and D = head_dim ?? H / nH (docs/architecture/phi3.md §1). */
export function headGeometry(r: ConfigReader, hidden: number, opts: { headDimKey?: boolean } = {}): { nHeads: number; nKvHeads: number; headDim: number } {
  const nHeads = r.int('num_attention_heads');
  const nKvHeads = r.int('num_key_value_heads', { default: nHeads });
  if (nHeads % nKvHeads !== 0)
    r.fail('num_key_value_heads', `= ${nKvHeads} does not divide num_attention_heads = ${nHeads}`);
  let headDim: number;
  if (opts.headDimKey && r.has('head_dim')) headDim = r.int('head_dim');
  else {
    if (hidden % nHeads !== 0) r.fail('num_attention_heads', `= ${nHeads} does not divide hidden_size = ${hidden}`);
    headDim = hidden / nHeads;
  }
  return { nHeads, nKvHeads, headDim };
}
