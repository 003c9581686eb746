/**
 * PhiMoE tensors (docs/architecture/phimoe.md §3). Attention q/k/v/o with biases iff `attention_bias`; LayerNorms with
 * weight and bias; the router `block_sparse_moe.gate` (v5: `block_sparse_moe.router`), possibly
 * quantized; experts in any of the three layouts @mlxcel/moe detects — HF per-expert
 * `experts.{e}.w1|w3|w2`, mlx-community stacked `switch_mlp.{gate,up,down}_proj`, v5 fused
 * `experts.gate_up_proj` — with the expert count checked against `num_local_experts`; `lm_head` with
 * bias iff `lm_head_bias`.
 */
import { loadExperts, type SwitchGLU } from '@mlxcel/moe';
import type { LayerNorm, Linear, WeightStore } from '@mlxcel/tensor';
import { openPhiCheckpoint, type PhiWeights } from '../common/weights.js';
import type { PhiMoEConfig } from './config.js';

export interface PhiMoELayer {
  inputNorm: LayerNorm;
  q: Linear;
  k: Linear;
  v: Linear;
  o: Linear;
  postNorm: LayerNorm;
  /** Router logits [E] per token, no bias. */
  router: Linear;
  experts: SwitchGLU;
}

export type PhiMoEWeights = PhiWeights<PhiMoELayer, LayerNorm>;

export function loadPhiMoEWeights(store: WeightStore, c: PhiMoEConfig, raw: Record<string, unknown>): PhiMoEWeights {
  const { ld, embed, finish } = openPhiCheckpoint(store, raw, c);
  const H = c.hidden_size, D = c.head_dim, E = c.num_local_experts, I = c.intermediate_size;
  const nH = c.num_attention_heads, nKV = c.num_key_value_heads;
  const eps = c.rms_norm_eps, bias = { bias: c.attention_bias };
  const layers = Array.from({ length: c.num_hidden_layers }, (_, l): PhiMoELayer => {
    const p = `model.layers.${l}`;
    const moe = `${p}.block_sparse_moe`;
    const routerPath = ld.has(`${moe}.router.weight`) && !ld.has(`${moe}.gate.weight`) ? `${moe}.router` : `${moe}.gate`;
    const layer: PhiMoELayer = {
      inputNorm: ld.layerNorm(`${p}.input_layernorm`, H, eps),
      q: ld.linear(`${p}.self_attn.q_proj`, [nH * D, H], bias), // [nH·D, H]
      k: ld.linear(`${p}.self_attn.k_proj`, [nKV * D, H], bias), // [nKV·D, H]
      v: ld.linear(`${p}.self_attn.v_proj`, [nKV * D, H], bias), // [nKV·D, H]
      o: ld.linear(`${p}.self_attn.o_proj`, [H, nH * D], bias), // [H, nH·D]
      postNorm: ld.layerNorm(`${p}.post_attention_layernorm`, H, eps),
      router: ld.linear(routerPath, [E, H]), // [E, H]
      experts: loadExperts(ld.store, moe, 'auto', { numExperts: E, activation: 'silu', hidden: H, intermediate: I, quant: ld.quant }),
    };
    // Only k of E experts are read per token.
    ld.stats.experts(3 * E * H * I, layer.experts.nbytes, c.num_experts_per_tok, E);
    return layer;
  });
  const norm = ld.layerNorm('model.norm', H, eps);
  return { embed, layers, norm, ...finish('phimoe', { tied: c.tie_word_embeddings, bias: c.lm_head_bias }) };
}
