/**
 * Random PhiMoE weights at a config's shapes (docs/architecture/phimoe.md §3): the HF per-expert layout for float
 * weights; with `quantize`, the mlx-community layout (experts stacked as switch_mlp.{gate,up,down}_proj,
 * router and every Linear/Embedding quantized, float `.bias` kept next to `.biases`).
 */
import { configDType, initBias, initFanIn, initNorm, RandomWeights, type RandomWeightOptions } from '@mlxcel/models-core';
import { parsePhiMoEConfig } from './config.js';

export function randomPhiMoEWeights(raw: Record<string, unknown>, opts: RandomWeightOptions = {}): RandomWeights {
  const c = parsePhiMoEConfig(raw);
  const ck = new RandomWeights(opts, configDType(raw));
  const H = c.hidden_size, D = c.head_dim, I = c.intermediate_size, E = c.num_local_experts;

  // ±1/sqrt(H) keeps a tied head's logits O(1); the layers see the embeddings through a norm.
  ck.module('model.embed_tokens', [c.vocab_size, H], initFanIn(H));
  const lin = (path: string, out: number, inp: number, bias: boolean) => {
    ck.module(path, [out, inp], initFanIn(inp));
    if (bias) ck.float(`${path}.bias`, [out], initBias);
  };
  const norm = (path: string) => {
    ck.float(`${path}.weight`, [H], initNorm);
    ck.float(`${path}.bias`, [H], initBias);
  };
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    norm(`${p}.input_layernorm`);
    lin(`${p}.self_attn.q_proj`, c.num_attention_heads * D, H, c.attention_bias);
    lin(`${p}.self_attn.k_proj`, c.num_key_value_heads * D, H, c.attention_bias);
    lin(`${p}.self_attn.v_proj`, c.num_key_value_heads * D, H, c.attention_bias);
    lin(`${p}.self_attn.o_proj`, H, c.num_attention_heads * D, c.attention_bias);
    norm(`${p}.post_attention_layernorm`);
    const moe = `${p}.block_sparse_moe`;
    // Router rows spread wider than the other Linears so that routing is not near-uniform.
    ck.module(`${moe}.gate`, [E, H], { a: 4 / Math.sqrt(H) });
    if (opts.quantize) {
      ck.module(`${moe}.switch_mlp.gate_proj`, [E, I, H], initFanIn(H));
      ck.module(`${moe}.switch_mlp.up_proj`, [E, I, H], initFanIn(H));
      ck.module(`${moe}.switch_mlp.down_proj`, [E, H, I], initFanIn(I));
    } else {
      for (let e = 0; e < E; e++) {
        ck.module(`${moe}.experts.${e}.w1`, [I, H], initFanIn(H));
        ck.module(`${moe}.experts.${e}.w3`, [I, H], initFanIn(H));
        ck.module(`${moe}.experts.${e}.w2`, [H, I], initFanIn(I));
      }
    }
  }
  norm('model.norm');
  if (!c.tie_word_embeddings) lin('lm_head', c.vocab_size, H, c.lm_head_bias);
  else if (c.lm_head_bias) ck.float('lm_head.bias', [c.vocab_size], initBias);
  return ck;
}
