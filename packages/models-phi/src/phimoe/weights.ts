/**
 * PhiMoE tensors (docs/architecture/phimoe.md §3). Attention q/k/v/o with biases iff `attention_bias`; LayerNorms with
 * weight and bias; the router `block_sparse_moe.gate` (v5: `block_sparse_moe.router`), possibly
 * quantized; experts in any of the three layouts @mlxcel/moe detects — HF per-expert
 * `experts.{e}.w1|w3|w2`, mlx-community stacked `switch_mlp.{gate,up,down}_proj`, v5 fused
 * `experts.gate_up_proj` — with the expert count checked against `num_local_experts`; `lm_head` with
 * bias iff `lm_head_bias`.
 */
import { loadExperts, type SwitchGLU } from '@mlxcel/moe';
import { Embedding, LayerNorm, Linear, loadVector, type WeightStore } from '@mlxcel/tensor';
import { TrackedWeights } from '../common/tracked.js';
import { checkShape, linear, loadCtx, WeightStats } from '../common/weights.js';
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

export interface PhiMoEWeights {
  embed: Embedding;
  layers: PhiMoELayer[];
  norm: LayerNorm;
  lmHead: Linear;
  stats: { parameters: number; weightBytes: number };
}

export function loadPhiMoEWeights(store: WeightStore, c: PhiMoEConfig, raw: Record<string, unknown>): PhiMoEWeights {
  const tracked = new TrackedWeights(store);
  tracked.ignore(/\.rotary_emb\.inv_freq$/);
  const ctx = loadCtx(tracked, raw);
  const H = c.hidden_size, D = c.head_dim, E = c.num_local_experts;
  const nH = c.num_attention_heads, nKV = c.num_key_value_heads;
  const eps = c.rms_norm_eps, bias = c.attention_bias;
  const stats = new WeightStats();
  const embed = Embedding.load(tracked, 'model.embed_tokens', { quant: ctx.quant });
  checkShape(embed.weight, 'model.embed_tokens.weight', [c.vocab_size, H]);
  const layers: PhiMoELayer[] = [];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const moe = `${p}.block_sparse_moe`;
    const routerPath = tracked.has(`${moe}.router.weight`) && !tracked.has(`${moe}.gate.weight`) ? `${moe}.router` : `${moe}.gate`;
    const layer: PhiMoELayer = {
      inputNorm: LayerNorm.load(tracked, `${p}.input_layernorm`, eps, { dim: H }),
      q: linear(ctx, `${p}.self_attn.q_proj`, nH * D, H, bias),
      k: linear(ctx, `${p}.self_attn.k_proj`, nKV * D, H, bias),
      v: linear(ctx, `${p}.self_attn.v_proj`, nKV * D, H, bias),
      o: linear(ctx, `${p}.self_attn.o_proj`, H, nH * D, bias),
      postNorm: LayerNorm.load(tracked, `${p}.post_attention_layernorm`, eps, { dim: H }),
      router: linear(ctx, routerPath, E, H, false),
      experts: loadExperts(tracked, moe, 'auto', {
        numExperts: E, activation: 'silu', hidden: H, intermediate: c.intermediate_size, quant: ctx.quant,
      }),
    };
    for (const lin of [layer.q, layer.k, layer.v, layer.o]) stats.dense(lin.weight, lin.bias ? lin.outFeatures : 0);
    stats.dense(layer.router.weight);
    // Only k of E experts are read per token.
    const ex = layer.experts;
    stats.parameters += 3 * E * H * c.intermediate_size;
    stats.weightBytes += (ex.nbytes * c.num_experts_per_tok) / E;
    stats.vector(4 * H);
    layers.push(layer);
  }
  const norm = LayerNorm.load(tracked, 'model.norm', eps, { dim: H });
  stats.vector(2 * H);
  let lmHead: Linear;
  if (c.tie_word_embeddings) {
    lmHead = c.lm_head_bias ? new Linear(embed.weight, loadVector(tracked, 'lm_head.bias', c.vocab_size)) : embed.asLinear();
    stats.dense(embed.weight);
  } else {
    lmHead = linear(ctx, 'lm_head', c.vocab_size, H, c.lm_head_bias);
    stats.partial(embed.weight, 1 / c.vocab_size);
    stats.dense(lmHead.weight, c.lm_head_bias ? c.vocab_size : 0);
  }
  tracked.assertAllUsed('phimoe');
  return { embed, layers, norm, lmHead, stats: stats.value };
}
