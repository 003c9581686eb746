/**
 * Phi-3-small tensors (docs/architecture/phi3small.md §2): every Linear has a bias, every norm is a LayerNorm with bias,
 * the output head is the embedding (tied, no lm_head in the checkpoint). mlx-community uses the same
 * names; a quantized module has `.scales`/`.biases` next to its float `.bias`. Old checkpoints may carry
 * `self_attn.rotary_emb.inv_freq`, which is dropped.
 */
import { Embedding, LayerNorm, type Linear, type WeightStore } from '@mlxcel/tensor';
import { TrackedWeights } from '../common/tracked.js';
import { checkShape, linear, loadCtx, WeightStats } from '../common/weights.js';
import type { Phi3SmallConfig } from './config.js';

export interface Phi3SmallLayer {
  inputNorm: LayerNorm;
  /** Grouped fused QKV (see qkv.ts). */
  qkv: Linear;
  dense: Linear;
  postNorm: LayerNorm;
  /** [2F, H], interleaved gelu/linear halves (docs/architecture/phi3small.md §2.2). */
  up: Linear;
  down: Linear;
}

export interface Phi3SmallWeights {
  embed: Embedding;
  layers: Phi3SmallLayer[];
  finalNorm: LayerNorm;
  lmHead: Linear;
  stats: { parameters: number; weightBytes: number };
}

export function loadPhi3SmallWeights(store: WeightStore, c: Phi3SmallConfig, raw: Record<string, unknown>): Phi3SmallWeights {
  const tracked = new TrackedWeights(store);
  tracked.ignore(/\.rotary_emb\.inv_freq$/);
  const ctx = loadCtx(tracked, raw);
  const H = c.hidden_size, D = c.head_dim, F = c.ff_intermediate_size;
  const eps = c.layer_norm_epsilon;
  const stats = new WeightStats();
  const embed = Embedding.load(tracked, 'model.embed_tokens', { quant: ctx.quant });
  checkShape(embed.weight, 'model.embed_tokens.weight', [c.vocab_size, H]);
  const layers: Phi3SmallLayer[] = [];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const layer: Phi3SmallLayer = {
      inputNorm: LayerNorm.load(tracked, `${p}.input_layernorm`, eps, { dim: H }),
      qkv: linear(ctx, `${p}.self_attn.query_key_value`, (c.num_attention_heads + 2 * c.num_key_value_heads) * D, H, true),
      dense: linear(ctx, `${p}.self_attn.dense`, H, c.num_attention_heads * D, true),
      postNorm: LayerNorm.load(tracked, `${p}.post_attention_layernorm`, eps, { dim: H }),
      up: linear(ctx, `${p}.mlp.up_proj`, 2 * F, H, true),
      down: linear(ctx, `${p}.mlp.down_proj`, H, F, true),
    };
    for (const lin of [layer.qkv, layer.dense, layer.up, layer.down]) stats.dense(lin.weight, lin.outFeatures);
    stats.vector(4 * H);
    layers.push(layer);
  }
  const finalNorm = LayerNorm.load(tracked, 'model.final_layernorm', eps, { dim: H });
  stats.vector(2 * H);
  let lmHead: Linear;
  if (c.tie_word_embeddings) {
    lmHead = embed.asLinear();
    stats.dense(embed.weight);
  } else {
    lmHead = linear(ctx, 'lm_head', c.vocab_size, H, false);
    stats.partial(embed.weight, 1 / c.vocab_size);
    stats.dense(lmHead.weight);
  }
  tracked.assertAllUsed('phi3small');
  return { embed, layers, finalNorm, lmHead, stats: stats.value };
}
