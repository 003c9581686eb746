/** Random Phi-3-small weights in the HF / mlx-community layout at a config's shapes (phi3small.md §2). */
import type { WeightStore } from '@mlxcel/tensor';
import { RandomCheckpoint, type RandomWeightOptions } from '../common/random.js';
import { parsePhi3SmallConfig } from './config.js';

export function randomPhi3SmallWeights(raw: Record<string, unknown>, opts: RandomWeightOptions = {}): WeightStore {
  const c = parsePhi3SmallConfig(raw);
  const ck = new RandomCheckpoint(opts, raw);
  const H = c.hidden_size, D = c.head_dim, F = c.ff_intermediate_size;
  const amp = (fanIn: number) => 1 / Math.sqrt(fanIn);
  // Embeddings are multiplied by mup_embedding_multiplier (10): keep them small.
  ck.matrix('model.embed_tokens', [c.vocab_size, H], 0.1);
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    for (const n of ['input_layernorm', 'post_attention_layernorm']) {
      ck.vector(`${p}.${n}.weight`, H, 1, 0.1);
      ck.vector(`${p}.${n}.bias`, H, 0, 0.05);
    }
    const lin = (name: string, out: number, inp: number) => {
      ck.matrix(`${p}.${name}`, [out, inp], amp(inp));
      ck.vector(`${p}.${name}.bias`, out, 0, 0.05);
    };
    lin('self_attn.query_key_value', (c.num_attention_heads + 2 * c.num_key_value_heads) * D, H);
    lin('self_attn.dense', H, c.num_attention_heads * D);
    lin('mlp.up_proj', 2 * F, H);
    lin('mlp.down_proj', H, F);
  }
  ck.vector('model.final_layernorm.weight', H, 1, 0.1);
  ck.vector('model.final_layernorm.bias', H, 0, 0.05);
  if (!c.tie_word_embeddings) ck.matrix('lm_head', [c.vocab_size, H], amp(H));
  return ck.store;
}
