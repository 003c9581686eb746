/** Random Phi-3 weights in the HF / mlx-community layout at a config's shapes (phi3.md §2). */
import type { WeightStore } from '@mlxcel/tensor';
import { RandomCheckpoint, type RandomWeightOptions } from '../common/random.js';
import { parsePhi3Config } from './config.js';

export function randomPhi3Weights(raw: Record<string, unknown>, opts: RandomWeightOptions = {}): WeightStore {
  const c = parsePhi3Config(raw);
  const ck = new RandomCheckpoint(opts, raw);
  const H = c.hidden_size, D = c.head_dim, I = c.intermediate_size;
  const nH = c.num_attention_heads, nKV = c.num_key_value_heads;
  // Uniform ±1/sqrt(fan_in) keeps activations O(1) through the residual stream.
  const amp = (fanIn: number) => 1 / Math.sqrt(fanIn);
  // ±1/sqrt(H) keeps a tied head's logits O(1); the layers see the embeddings through a norm.
  ck.matrix('model.embed_tokens', [c.vocab_size, H], amp(H));
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    ck.vector(`${p}.input_layernorm.weight`, H, 1, 0.1);
    ck.matrix(`${p}.self_attn.qkv_proj`, [(nH + 2 * nKV) * D, H], amp(H));
    ck.matrix(`${p}.self_attn.o_proj`, [H, nH * D], amp(nH * D));
    ck.vector(`${p}.post_attention_layernorm.weight`, H, 1, 0.1);
    ck.matrix(`${p}.mlp.gate_up_proj`, [2 * I, H], amp(H));
    ck.matrix(`${p}.mlp.down_proj`, [H, I], amp(I));
  }
  ck.vector('model.norm.weight', H, 1, 0.1);
  if (!c.tie_word_embeddings) ck.matrix('lm_head', [c.vocab_size, H], amp(H));
  return ck.store;
}
