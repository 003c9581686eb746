/**
 * Phi-3 tensors (docs/architecture/phi3.md §2). Hugging Face and mlx-community checkpoints share the names; an MLX
 * quantized module is recognised by its `.scales` tensor. No biases anywhere; lm_head is absent when
 * tie_word_embeddings is true (the head is then the embedding matrix, quantized or not).
 */
import { Embedding, Linear, RMSNorm, type WeightStore } from '@mlxcel/tensor';
import { linear, loadCtx, checkShape, WeightStats } from '../common/weights.js';
import { TrackedWeights } from '../common/tracked.js';
import type { Phi3Config } from './config.js';

export interface Phi3Layer {
  inputNorm: RMSNorm;
  /** Fused [Q; K; V] rows block-wise: nH·D, nKV·D, nKV·D (docs/architecture/phi3.md §2.1). */
  qkv: Linear;
  o: Linear;
  postNorm: RMSNorm;
  /** Fused [gate; up]: first I rows gate, next I rows up (docs/architecture/phi3.md §2.1). */
  gateUp: Linear;
  down: Linear;
}

export interface Phi3Weights {
  embed: Embedding;
  layers: Phi3Layer[];
  norm: RMSNorm;
  lmHead: Linear;
  stats: { parameters: number; weightBytes: number };
}

export function loadPhi3Weights(store: WeightStore, c: Phi3Config, raw: Record<string, unknown>): Phi3Weights {
  const tracked = new TrackedWeights(store);
  tracked.ignore(/\.rotary_emb\.inv_freq$/); // a RoPE buffer some old checkpoints saved; recomputed here
  const ctx = loadCtx(tracked, raw);
  const H = c.hidden_size, D = c.head_dim, I = c.intermediate_size;
  const qkvRows = (c.num_attention_heads + 2 * c.num_key_value_heads) * D;
  const stats = new WeightStats();
  const embed = Embedding.load(tracked, 'model.embed_tokens', { quant: ctx.quant });
  checkShape(embed.weight, 'model.embed_tokens.weight', [c.vocab_size, H]);
  const layers: Phi3Layer[] = [];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const layer: Phi3Layer = {
      inputNorm: RMSNorm.load(tracked, `${p}.input_layernorm`, c.rms_norm_eps, { dim: H }),
      qkv: linear(ctx, `${p}.self_attn.qkv_proj`, qkvRows, H, false),
      o: linear(ctx, `${p}.self_attn.o_proj`, H, c.num_attention_heads * D, false),
      postNorm: RMSNorm.load(tracked, `${p}.post_attention_layernorm`, c.rms_norm_eps, { dim: H }),
      gateUp: linear(ctx, `${p}.mlp.gate_up_proj`, 2 * I, H, false),
      down: linear(ctx, `${p}.mlp.down_proj`, H, I, false),
    };
    for (const lin of [layer.qkv, layer.o, layer.gateUp, layer.down]) stats.dense(lin.weight);
    stats.vector(2 * H);
    layers.push(layer);
  }
  const norm = RMSNorm.load(tracked, 'model.norm', c.rms_norm_eps, { dim: H });
  stats.vector(H);
  let lmHead: Linear;
  if (c.tie_word_embeddings) {
    lmHead = embed.asLinear();
    stats.dense(embed.weight); // read in full by the head every token
  } else {
    lmHead = linear(ctx, 'lm_head', c.vocab_size, H, false);
    stats.partial(embed.weight, 1 / c.vocab_size);
    stats.dense(lmHead.weight);
  }
  tracked.assertAllUsed('phi3');
  return { embed, layers, norm, lmHead, stats: stats.value };
}
