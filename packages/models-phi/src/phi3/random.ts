/** Random Phi-3 weights in the HF / mlx-community layout at a config's shapes (docs/architecture/phi3.md §2). */
import { configDType, initBias, initFanIn, initNorm, RandomWeights, type RandomWeightOptions } from '@mlxcel/models-core';
import { parsePhi3Config } from './config.js';

export function randomPhi3Weights(raw: Record<string, unknown>, opts: RandomWeightOptions = {}): RandomWeights {
  const c = parsePhi3Config(raw);
  const ck = new RandomWeights(opts, configDType(raw));
  const H = c.hidden_size, D = c.head_dim, I = c.intermediate_size;
  const nH = c.num_attention_heads, nKV = c.num_key_value_heads;
  // ±1/sqrt(H) keeps a tied head's logits O(1); the layers see the embeddings through a norm.
  ck.module('model.embed_tokens', [c.vocab_size, H], initFanIn(H));
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    ck.float(`${p}.input_layernorm.weight`, [H], initNorm);
    ck.module(`${p}.self_attn.qkv_proj`, [(nH + 2 * nKV) * D, H], initFanIn(H));
    ck.module(`${p}.self_attn.o_proj`, [H, nH * D], initFanIn(nH * D));
    ck.float(`${p}.post_attention_layernorm.weight`, [H], initNorm);
    ck.module(`${p}.mlp.gate_up_proj`, [2 * I, H], initFanIn(H));
    ck.module(`${p}.mlp.down_proj`, [H, I], initFanIn(I));
  }
  ck.float('model.norm.weight', [H], initNorm);
  if (!c.tie_word_embeddings) ck.module('lm_head', [c.vocab_size, H], initFanIn(H));
  return ck;
}
