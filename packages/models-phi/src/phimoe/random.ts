/**
 * Random PhiMoE weights at a config's shapes (phimoe.md §3): the HF per-expert layout for float
 * weights; with `quantize`, the mlx-community layout (experts stacked as switch_mlp.{gate,up,down}_proj,
 * router and every Linear/Embedding quantized, float `.bias` kept next to `.biases`).
 */
import type { WeightStore } from '@mlxcel/tensor';
import { RandomCheckpoint, type RandomWeightOptions } from '../common/random.js';
import { parsePhiMoEConfig } from './config.js';

export function randomPhiMoEWeights(raw: Record<string, unknown>, opts: RandomWeightOptions = {}): WeightStore {
  const c = parsePhiMoEConfig(raw);
  const ck = new RandomCheckpoint(opts, raw);
  const H = c.hidden_size, D = c.head_dim, I = c.intermediate_size, E = c.num_local_experts;
  const amp = (fanIn: number) => 1 / Math.sqrt(fanIn);
  // ±1/sqrt(H) keeps a tied head's logits O(1); the layers see the embeddings through a norm.
  ck.matrix('model.embed_tokens', [c.vocab_size, H], amp(H));
  const lin = (path: string, out: number, inp: number, bias: boolean) => {
    ck.matrix(path, [out, inp], amp(inp));
    if (bias) ck.vector(`${path}.bias`, out, 0, 0.05);
  };
  const norm = (path: string) => {
    ck.vector(`${path}.weight`, H, 1, 0.1);
    ck.vector(`${path}.bias`, H, 0, 0.05);
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
    ck.matrix(`${moe}.gate`, [E, H], 4 * amp(H));
    if (opts.quantize) {
      ck.matrix(`${moe}.switch_mlp.gate_proj`, [E, I, H], amp(H));
      ck.matrix(`${moe}.switch_mlp.up_proj`, [E, I, H], amp(H));
      ck.matrix(`${moe}.switch_mlp.down_proj`, [E, H, I], amp(I));
    } else {
      for (let e = 0; e < E; e++) {
        ck.matrix(`${moe}.experts.${e}.w1`, [I, H], amp(H));
        ck.matrix(`${moe}.experts.${e}.w3`, [I, H], amp(H));
        ck.matrix(`${moe}.experts.${e}.w2`, [H, I], amp(I));
      }
    }
  }
  norm('model.norm');
  if (!c.tie_word_embeddings) lin('lm_head', c.vocab_size, H, c.lm_head_bias);
  else if (c.lm_head_bias) ck.vector('lm_head.bias', c.vocab_size, 0, 0.05);
  return ck.store;
}
