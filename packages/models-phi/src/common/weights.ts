/**
 * The steps every Phi weight map shares, over models-core's WeightLoader (quantization detected by
 * `.scales`, shapes checked against the config, size figures tallied): the unused-tensor tracking
 * (old checkpoints' `self_attn.rotary_emb.inv_freq` RoPE buffers are dropped: the tables are
 * recomputed), the token embedding [vocab, hidden], and at the end the LM head and the check that the
 * checkpoint held nothing else.
 */
import { WeightLoader } from '@mlxcel/models-core';
import { TrackedWeights, type Embedding, type LayerNorm, type Linear, type RMSNorm, type WeightStore } from '@mlxcel/tensor';

/** What every Phi weight map holds: embedding, the decoder layers, the final norm, the LM head, the size figures. */
export interface PhiWeights<L, N extends RMSNorm | LayerNorm> {
  embed: Embedding;
  layers: L[];
  norm: N;
  lmHead: Linear;
  stats: { parameters: number; weightBytes: number };
}

export interface PhiCheckpoint {
  ld: WeightLoader;
  /** model.embed_tokens [vocab, hidden]. */
  embed: Embedding;
  /**
   * The LM head [vocab, hidden] — the embedding when tied, else `lm_head` — with `lm_head.bias` iff the
   * config declares one; then every tensor must have been read (E_UNEXPECTED_TENSOR names the rest).
   */
  finish(family: string, head: { tied: boolean; bias?: boolean }): { lmHead: Linear; stats: { parameters: number; weightBytes: number } };
}

export function openPhiCheckpoint(store: WeightStore, raw: Record<string, unknown>, c: { vocab_size: number; hidden_size: number }): PhiCheckpoint {
  const tracked = new TrackedWeights(store);
  tracked.ignore(/\.rotary_emb\.inv_freq$/);
  const ld = WeightLoader.forConfig(tracked, raw);
  const embed = ld.embedding('model.embed_tokens', [c.vocab_size, c.hidden_size]);
  return {
    ld,
    embed,
    finish(family, head) {
      const lmHead = ld.head(embed, { tied: head.tied, bias: head.bias, shape: [c.vocab_size, c.hidden_size] });
      tracked.assertAllUsed(family);
      return { lmHead, stats: ld.stats.value };
    },
  };
}
