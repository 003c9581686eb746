/** Random Phi-3-small weights in the HF / mlx-community layout at a config's shapes (docs/architecture/phi3small.md §2). */
import { configDType, initBias, initFanIn, initNorm, RandomWeights, type RandomWeightOptions } from '@mlxcel/models-core';
import { parsePhi3SmallConfig } from './config.js';

export function randomPhi3SmallWeights(raw: Record<string, unknown>, opts: RandomWeightOptions = {}): RandomWeights {
  const c = parsePhi3SmallConfig(raw);
  const ck = new RandomWeights(opts, configDType(raw));
  const H = c.hidden_size, D = c.head_dim, F = c.ff_intermediate_size;
  // Embeddings are multiplied by mup_embedding_multiplier (10): keep them small.
  ck.module('model.embed_tokens', [c.vocab_size, H], { a: 0.1 });
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    for (const n of ['input_layernorm', 'post_attention_layernorm']) {
      ck.float(`${p}.${n}.weight`, [H], initNorm);
      ck.float(`${p}.${n}.bias`, [H], initBias);
    }
    const lin = (name: string, out: number, inp: number) => {
      ck.module(`${p}.${name}`, [out, inp], initFanIn(inp));
      ck.float(`${p}.${name}.bias`, [out], initBias);
    };
    lin('self_attn.query_key_value', (c.num_attention_heads + 2 * c.num_key_value_heads) * D, H);
    lin('self_attn.dense', H, c.num_attention_heads * D);
    lin('mlp.up_proj', 2 * F, H);
    lin('mlp.down_proj', H, F);
  }
  ck.float('model.final_layernorm.weight', [H], initNorm);
  ck.float('model.final_layernorm.bias', [H], initBias);
  if (!c.tie_word_embeddings) ck.module('lm_head', [c.vocab_size, H], initFanIn(H));
  return ck;
}
