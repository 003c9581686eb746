/**
 * Random Gemma 3n weights in the HF multimodal layout (`model.language_model.*`), for bench --random
 * and real-shape tests. KV-shared layers get no k/v weights (they are unused, docs/architecture/gemma3n.md §10).
 * AltUp coefficient matrices are never quantized (their input dim K is not a multiple of a group).
 */
import { initLinear, initNorm, RandomWeights, type RandomWeightOptions } from '@mlxcel/models-core';
import { parseGemma3nConfig } from './config.js';

export function gemma3nRandomWeights(config: Record<string, unknown>, opts: RandomWeightOptions = {}): RandomWeights {
  const c = parseGemma3nConfig(config);
  const w = new RandomWeights(opts);
  const p = 'model.language_model.';
  const H = c.hiddenSize, P = c.hiddenSizePerLayerInput, NL = c.numLayers, K = c.altupNumInputs;
  const hd = c.headDim, nh = c.numHeads, nkv = c.numKvHeads, R = c.laurelRank;
  w.module(`${p}embed_tokens`, [c.vocabSize, H], initLinear(H));
  w.module(`${p}embed_tokens_per_layer`, [c.vocabSizePerLayerInput, NL * P], initLinear(NL * P));
  w.module(`${p}per_layer_model_projection`, [NL * P, H], initLinear(H));
  w.float(`${p}per_layer_projection_norm.weight`, [P], initNorm);
  for (let k = 0; k < K - 1; k++) {
    w.module(`${p}altup_projections.${k}`, [H, H], initLinear(H));
    w.module(`${p}altup_unembed_projections.${k}`, [H, H], initLinear(H));
  }
  for (let l = 0; l < NL; l++) {
    const q = `${p}layers.${l}.`;
    const I = c.intermediateSizes[l]!;
    w.module(`${q}self_attn.q_proj`, [nh * hd, H], initLinear(H));
    w.module(`${q}self_attn.o_proj`, [H, nh * hd], initLinear(nh * hd));
    w.float(`${q}self_attn.q_norm.weight`, [hd], initNorm);
    if (c.kvSources[l] === l) {
      w.module(`${q}self_attn.k_proj`, [nkv * hd, H], initLinear(H));
      w.module(`${q}self_attn.v_proj`, [nkv * hd, H], initLinear(H));
      w.float(`${q}self_attn.k_norm.weight`, [hd], initNorm);
    }
    for (const n of ['input_layernorm', 'post_attention_layernorm', 'pre_feedforward_layernorm', 'post_feedforward_layernorm', 'post_per_layer_input_norm'])
      w.float(`${q}${n}.weight`, [H], initNorm);
    w.module(`${q}mlp.gate_proj`, [I, H], initLinear(H));
    w.module(`${q}mlp.up_proj`, [I, H], initLinear(H));
    w.module(`${q}mlp.down_proj`, [H, I], initLinear(I));
    w.float(`${q}altup.correct_output_scale`, [H], initNorm);
    w.float(`${q}altup.correction_coefs.weight`, [K, K], { a: 0.1 });
    w.float(`${q}altup.prediction_coefs.weight`, [K * K, K], { a: 0.1 });
    w.module(`${q}altup.modality_router`, [K, H], initLinear(H));
    w.float(`${q}altup.router_norm.weight`, [H], initNorm);
    w.module(`${q}laurel.linear_left`, [R, H], initLinear(H));
    w.module(`${q}laurel.linear_right`, [H, R], initLinear(R));
    w.float(`${q}laurel.post_laurel_norm.weight`, [H], initNorm);
    w.module(`${q}per_layer_input_gate`, [P, H], initLinear(H));
    w.module(`${q}per_layer_projection`, [H, P], initLinear(P));
  }
  w.float(`${p}norm.weight`, [H], initNorm);
  return w;
}
