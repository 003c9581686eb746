/**
 * Random Gemma 4 weights in the HF multimodal layout (`model.language_model.*`), for bench --random
 * and real-shape tests. KV-shared layers get no k/v weights, k_eq_v full layers no v_proj. Experts use
 * HF's fused tensors (`experts.gate_up_proj`, `experts.down_proj`, no `.weight`) when float, and the
 * mlx-community split layout (`experts.switch_glu.{gate,up,down}_proj`) when quantized, as converted
 * checkpoints store them.
 */
import { initLinear, initNorm, initOnes, RandomWeights, type RandomWeightOptions } from '@mlxcel/models-core';
import { parseGemma4Config } from './config.js';

export function gemma4RandomWeights(config: Record<string, unknown>, opts: RandomWeightOptions = {}): RandomWeights {
  const c = parseGemma4Config(config);
  const w = new RandomWeights(opts);
  const p = 'model.language_model.';
  const H = c.hiddenSize, P = c.hiddenSizePerLayerInput, NL = c.numLayers, nh = c.numHeads;
  w.module(`${p}embed_tokens`, [c.vocabSize, H], initLinear(H));
  if (P > 0) {
    w.module(`${p}embed_tokens_per_layer`, [c.vocabSizePerLayerInput, NL * P], initLinear(NL * P));
    w.module(`${p}per_layer_model_projection`, [NL * P, H], initLinear(H));
    w.float(`${p}per_layer_projection_norm.weight`, [P], initNorm);
  }
  for (let l = 0; l < NL; l++) {
    const q = `${p}layers.${l}.`;
    const hd = c.headDims[l]!, nkv = c.numKvHeads[l]!, I = c.intermediateSizes[l]!;
    w.module(`${q}self_attn.q_proj`, [nh * hd, H], initLinear(H));
    w.module(`${q}self_attn.o_proj`, [H, nh * hd], initLinear(nh * hd));
    w.float(`${q}self_attn.q_norm.weight`, [hd], initNorm);
    if (c.kvSources[l] === l) {
      w.module(`${q}self_attn.k_proj`, [nkv * hd, H], initLinear(H));
      if (!c.kEqV[l]) w.module(`${q}self_attn.v_proj`, [nkv * hd, H], initLinear(H));
      w.float(`${q}self_attn.k_norm.weight`, [hd], initNorm);
    }
    for (const n of ['input_layernorm', 'post_attention_layernorm', 'pre_feedforward_layernorm', 'post_feedforward_layernorm'])
      w.float(`${q}${n}.weight`, [H], initNorm);
    w.module(`${q}mlp.gate_proj`, [I, H], initLinear(H));
    w.module(`${q}mlp.up_proj`, [I, H], initLinear(H));
    w.module(`${q}mlp.down_proj`, [H, I], initLinear(I));
    w.float(`${q}layer_scalar`, [1], initOnes);
    if (P > 0) {
      w.module(`${q}per_layer_input_gate`, [P, H], initLinear(H));
      w.module(`${q}per_layer_projection`, [H, P], initLinear(P));
      w.float(`${q}post_per_layer_input_norm.weight`, [H], initNorm);
    }
    if (c.moe) {
      const { numExperts: E, intermediate: Im } = c.moe;
      w.module(`${q}router.proj`, [E, H], initLinear(H));
      w.float(`${q}router.scale`, [H], initNorm);
      w.float(`${q}router.per_expert_scale`, [E], initNorm);
      if (opts.quantize) {
        w.module(`${q}experts.switch_glu.gate_proj`, [E, Im, H], initLinear(H));
        w.module(`${q}experts.switch_glu.up_proj`, [E, Im, H], initLinear(H));
        w.module(`${q}experts.switch_glu.down_proj`, [E, H, Im], initLinear(Im));
      } else {
        w.float(`${q}experts.gate_up_proj`, [E, 2 * Im, H], initLinear(H));
        w.float(`${q}experts.down_proj`, [E, H, Im], initLinear(Im));
      }
      for (const n of ['pre_feedforward_layernorm_2', 'post_feedforward_layernorm_1', 'post_feedforward_layernorm_2'])
        w.float(`${q}${n}.weight`, [H], initNorm);
    }
  }
  w.float(`${p}norm.weight`, [H], initNorm);
  return w;
}
