/**
 * Phi-3 tensors (docs/architecture/phi3.md §2). Hugging Face and mlx-community checkpoints share the names; an MLX
 * quantized module is recognised by its `.scales` tensor. No biases anywhere; lm_head is absent when
 * tie_word_embeddings is true (the head is then the embedding matrix, quantized or not).
 */
import type { Linear, RMSNorm, WeightStore } from '@mlxcel/tensor';
import { openPhiCheckpoint, type PhiWeights } from '../common/weights.js';
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

export type Phi3Weights = PhiWeights<Phi3Layer, RMSNorm>;

export function loadPhi3Weights(store: WeightStore, c: Phi3Config, raw: Record<string, unknown>): Phi3Weights {
  const { ld, embed, finish } = openPhiCheckpoint(store, raw, c);
  const H = c.hidden_size, D = c.head_dim, I = c.intermediate_size, eps = c.rms_norm_eps;
  const nH = c.num_attention_heads, nKV = c.num_key_value_heads;
  const layers = Array.from({ length: c.num_hidden_layers }, (_, l): Phi3Layer => {
    const p = `model.layers.${l}`;
    return {
      inputNorm: ld.rmsNorm(`${p}.input_layernorm`, H, eps),
      qkv: ld.linear(`${p}.self_attn.qkv_proj`, [(nH + 2 * nKV) * D, H]), // [(nH + 2·nKV)·D, H]
      o: ld.linear(`${p}.self_attn.o_proj`, [H, nH * D]), // [H, nH·D]
      postNorm: ld.rmsNorm(`${p}.post_attention_layernorm`, H, eps),
      gateUp: ld.linear(`${p}.mlp.gate_up_proj`, [2 * I, H], { ffn: 'input' }), // [2I, H]
      down: ld.linear(`${p}.mlp.down_proj`, [H, I], { ffn: 'output' }), // [H, I]
    };
  });
  const norm = ld.rmsNorm('model.norm', H, eps);
  return { embed, layers, norm, ...finish('phi3', { tied: c.tie_word_embeddings }) };
}
