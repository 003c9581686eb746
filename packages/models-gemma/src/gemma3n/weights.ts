/**
 * Gemma 3n text-tower weights (canonical names of docs/architecture/gemma3n.md §2, under any prefix of
 * docs/architecture/gemma-common.md §9). KV-shared layers load only q_proj / q_norm / o_proj: their k/v weights are
 * unused, so checkpoints with or without them load alike.
 */
import { ConfigReader, type WeightLoader, type WeightStats } from '@mlxcel/models-core';
import type { Embedding, Linear, RMSNorm, WeightStore } from '@mlxcel/tensor';
import { GemmaAttention, type SharedQueryOffset } from '../common/attention.js';
import { GemmaMLP } from '../common/mlp.js';
import { PerLayerInputs } from '../common/ple.js';
import { ropeTables } from '../common/rope.js';
import { HEAD_PATHS, openTextTower } from '../common/weights.js';
import { AltUp } from './altup.js';
import type { Gemma3nConfig } from './config.js';

export interface Gemma3nLayer {
  attn: GemmaAttention;
  mlp: GemmaMLP;
  altup: AltUp;
  inputNorm: RMSNorm;
  postAttnNorm: RMSNorm;
  preFfNorm: RMSNorm;
  postFfNorm: RMSNorm;
  laurelLeft: Linear;
  laurelRight: Linear;
  postLaurelNorm: RMSNorm;
  pliGate: Linear;
  pliProjection: Linear;
  postPliNorm: RMSNorm;
}

export interface Gemma3nWeights {
  embed: Embedding;
  ple: PerLayerInputs;
  altupProjections: Linear[];
  altupUnembed: Linear[];
  layers: Gemma3nLayer[];
  norm: RMSNorm;
  head: Linear;
  stats: WeightStats;
}

/** Clamp to ±clip (docs/architecture/gemma3n.md §7.1: both coefficient matrices, once at load). */
function clamp(w: Float32Array, clip: number | null): Float32Array {
  if (clip === null) return w;
  for (let i = 0; i < w.length; i++) w[i] = Math.min(clip, Math.max(-clip, w[i]!));
  return w;
}

export function loadGemma3nWeights(
  store: WeightStore,
  config: Record<string, unknown>,
  cfg: Gemma3nConfig,
  opts: { sharedQueryOffset?: SharedQueryOffset } = {},
): Gemma3nWeights {
  const ld = openTextTower(store, config);
  const H = cfg.hiddenSize, P = cfg.hiddenSizePerLayerInput, NL = cfg.numLayers, K = cfg.altupNumInputs, eps = cfg.eps;
  const hd = cfg.headDim, nh = cfg.numHeads, nkv = cfg.numKvHeads;
  const embed = ld.embedding('embed_tokens', [cfg.vocabSize, H]);
  const ple = new PerLayerInputs(
    { numLayers: NL, perLayer: P, hidden: H, vocabPerLayer: cfg.vocabSizePerLayerInput },
    ld.embedding('embed_tokens_per_layer', [cfg.vocabSizePerLayerInput, NL * P]),
    ld.linear('per_layer_model_projection', [NL * P, H]),
    ld.rmsNorm('per_layer_projection_norm', P, eps),
  );
  const altupProjections = Array.from({ length: K - 1 }, (_, k) => ld.linear(`altup_projections.${k}`, [H, H]));
  const altupUnembed = Array.from({ length: K - 1 }, (_, k) => ld.linear(`altup_unembed_projections.${k}`, [H, H]));
  const ropes = ropeTables(new ConfigReader(config, cfg.modelType, { textConfig: true }), cfg.layerTypes, cfg.layerTypes.map(() => hd));

  const layers = cfg.layerTypes.map((type, l): Gemma3nLayer => {
    const p = `layers.${l}.`;
    const shared = cfg.kvSources[l] !== l;
    const I = cfg.intermediateSizes[l]!;
    const attn = new GemmaAttention(
      { nHeads: nh, nKvHeads: nkv, headDim: hd, scale: 1, window: type === 'sliding_attention' ? cfg.slidingWindow : null, eps },
      {
        q: ld.linear(`${p}self_attn.q_proj`, [nh * hd, H]),
        o: ld.linear(`${p}self_attn.o_proj`, [H, nh * hd]),
        qNorm: ld.rmsNorm(`${p}self_attn.q_norm`, hd, eps),
        k: shared ? null : ld.linear(`${p}self_attn.k_proj`, [nkv * hd, H]),
        kNorm: shared ? null : ld.rmsNorm(`${p}self_attn.k_norm`, hd, eps),
        v: shared ? null : ld.linear(`${p}self_attn.v_proj`, [nkv * hd, H]),
      },
      ropes.get(type)!,
      l,
      shared,
      opts.sharedQueryOffset,
    );
    const altup = new AltUp(
      K,
      H,
      ld.rmsNorm(`${p}altup.router_norm`, H, eps),
      ld.linear(`${p}altup.modality_router`, [K, H]),
      clamp(ld.dense(`${p}altup.prediction_coefs`, [K * K, K]), cfg.altupCoefClip),
      clamp(ld.dense(`${p}altup.correction_coefs`, [K, K]), cfg.altupCoefClip),
      cfg.altupCorrectScale ? ld.vector(`${p}altup.correct_output_scale`, H) : null,
    );
    return {
      attn,
      mlp: new GemmaMLP(
        ld.linear(`${p}mlp.gate_proj`, [I, H], { ffn: 'input' }),
        ld.linear(`${p}mlp.up_proj`, [I, H], { ffn: 'input' }),
        ld.linear(`${p}mlp.down_proj`, [H, I], { ffn: 'output' }),
        cfg.activationSparsity[l],
      ),
      altup,
      inputNorm: ld.rmsNorm(`${p}input_layernorm`, H, eps),
      postAttnNorm: ld.rmsNorm(`${p}post_attention_layernorm`, H, eps),
      preFfNorm: ld.rmsNorm(`${p}pre_feedforward_layernorm`, H, eps),
      postFfNorm: ld.rmsNorm(`${p}post_feedforward_layernorm`, H, eps),
      laurelLeft: ld.linear(`${p}laurel.linear_left`, [cfg.laurelRank, H]),
      laurelRight: ld.linear(`${p}laurel.linear_right`, [H, cfg.laurelRank]),
      postLaurelNorm: ld.rmsNorm(`${p}laurel.post_laurel_norm`, H, eps),
      pliGate: ld.linear(`${p}per_layer_input_gate`, [P, H]),
      pliProjection: ld.linear(`${p}per_layer_projection`, [H, P]),
      postPliNorm: ld.rmsNorm(`${p}post_per_layer_input_norm`, H, eps),
    };
  });

  const norm = ld.rmsNorm('norm', H, eps);
  const head = ld.head(embed, { tied: cfg.tieWordEmbeddings, shape: [cfg.vocabSize, H], paths: HEAD_PATHS });
  return { embed, ple, altupProjections, altupUnembed, layers, norm, head, stats: ld.stats };
}
