/**
 * Phi-3-small tensors (docs/architecture/phi3small.md §2): every Linear has a bias, every norm is a LayerNorm with bias,
 * the output head is the embedding (tied, no lm_head in the checkpoint). mlx-community uses the same
 * names; a quantized module has `.scales`/`.biases` next to its float `.bias`. Old checkpoints may carry
 * `self_attn.rotary_emb.inv_freq`, which is dropped.
 */
import type { LayerNorm, Linear, WeightStore } from '@mlxcel/tensor';
import { openPhiCheckpoint, type PhiWeights } from '../common/weights.js';
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

export type Phi3SmallWeights = PhiWeights<Phi3SmallLayer, LayerNorm>;

export function loadPhi3SmallWeights(store: WeightStore, c: Phi3SmallConfig, raw: Record<string, unknown>): Phi3SmallWeights {
  const { ld, embed, finish } = openPhiCheckpoint(store, raw, c);
  const H = c.hidden_size, D = c.head_dim, F = c.ff_intermediate_size, eps = c.layer_norm_epsilon;
  const nH = c.num_attention_heads, nKV = c.num_key_value_heads;
  const bias = { bias: true }, ffnIn = { bias: true, ffn: 'input' as const }, ffnOut = { bias: true, ffn: 'output' as const };
  const layers = Array.from({ length: c.num_hidden_layers }, (_, l): Phi3SmallLayer => {
    const p = `model.layers.${l}`;
    return {
      inputNorm: ld.layerNorm(`${p}.input_layernorm`, H, eps),
      qkv: ld.linear(`${p}.self_attn.query_key_value`, [(nH + 2 * nKV) * D, H], bias), // [(nH + 2·nKV)·D, H]
      dense: ld.linear(`${p}.self_attn.dense`, [H, nH * D], bias), // [H, nH·D]
      postNorm: ld.layerNorm(`${p}.post_attention_layernorm`, H, eps),
      up: ld.linear(`${p}.mlp.up_proj`, [2 * F, H], ffnIn), // [2F, H]
      down: ld.linear(`${p}.mlp.down_proj`, [H, F], ffnOut), // [H, F]
    };
  });
  const norm = ld.layerNorm('model.final_layernorm', H, eps);
  return { embed, layers, norm, ...finish('phi3small', { tied: c.tie_word_embeddings }) };
}
