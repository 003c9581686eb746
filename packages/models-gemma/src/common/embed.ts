/**
 * Token embeddings and the multimodal hook. e_i = embed_tokens[id_i] · sqrt(H) (HF
 * `Gemma3nTextScaledWordEmbedding`), with sqrt(H) rounded once to f32 (docs/architecture/gemma-common.md §6);
 * rows listed in `embeddingOverrides` are then replaced by the front-end's values, which
 * are NOT scaled. Token ids were range-checked by models-core `checkBatch`.
 */
import { MlxcelError, ops, type Embedding } from '@mlxcel/tensor';
import type { GemmaLayout } from './batch.js';

/** [N, H] scaled embeddings of the batch's rows, overrides applied. */
export function embedBatch(table: Embedding, batch: GemmaLayout): Float32Array {
  const H = table.dim;
  const e = table.forward(batch.ids);
  ops.scale(e, Math.fround(Math.sqrt(H)), 0, e);
  batch.seqs.forEach((s, b) => {
    const o = s.input.embeddingOverrides;
    if (!o) return;
    if (o.values.length !== o.rows.length * H)
      throw new MlxcelError('E_SHAPE', `batch[${b}].embeddingOverrides: ${o.values.length} values for ${o.rows.length} rows of hidden size ${H}`);
    o.rows.forEach((row, i) => {
      if (!(row >= 0 && row < s.len)) throw new MlxcelError('E_INPUT', `batch[${b}].embeddingOverrides.rows[${i}] = ${row} is outside [0, ${s.len})`);
      e.set(o.values.subarray(i * H, (i + 1) * H), (s.start + row) * H);
    });
  });
  return e;
}
