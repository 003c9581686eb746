/**
 * Gemma 4 text-tower weights (docs/architecture/gemma4.md §6–§9, prefixes of docs/architecture/gemma-common.md §9). KV-shared layers
 * load only q_proj / q_norm / o_proj (their k/v weights may or may not be in the file, §7); full
 * layers with attention_k_eq_v have no v_proj.
 */
import { ConfigReader, type WeightLoader, type WeightStats } from '@mlxcel/models-core';
import { MlxcelError, type Embedding, type Linear, type RMSNorm, type WeightStore } from '@mlxcel/tensor';
import { GemmaAttention, type SharedQueryOffset } from '../common/attention.js';
import { GemmaMLP } from '../common/mlp.js';
import { PerLayerInputs } from '../common/ple.js';
import { ropeTables } from '../common/rope.js';
import { HEAD_PATHS, openTextTower } from '../common/weights.js';
import type { Gemma4Config } from './config.js';
import { loadMoeBlock, type Gemma4MoeBlock } from './moe-block.js';

export interface Gemma4Layer {
  attn: GemmaAttention;
  mlp: GemmaMLP;
  moe: Gemma4MoeBlock | null;
  inputNorm: RMSNorm;
  postAttnNorm: RMSNorm;
  preFfNorm: RMSNorm;
  postFfNorm: RMSNorm;
  /** Per-layer-input injection (E-series only). */
  pli: { gate: Linear; projection: Linear; norm: RMSNorm } | null;
  /** Multiplies the whole layer output, residual included (§8); 1 when absent. */
  layerScalar: number;
}

export interface Gemma4Weights {
  embed: Embedding;
  ple: PerLayerInputs | null;
  layers: Gemma4Layer[];
  norm: RMSNorm;
  head: Linear;
  /** KV heads per layer as found in the checkpoint (§6.2 cross-check). */
  numKvHeads: number[];
  stats: WeightStats;
  warnings: string[];
}

/**
 * §6.2: the engine rule gives full layers num_global_key_value_heads whenever it is set; HF / mlx-lm
 * only when attention_k_eq_v. Both agree for every released checkpoint; if k_proj fits only the
 * other rule we follow the tensor (with a warning), and fail naming the layer if it fits neither.
 */
function kvHeadsOf(k: Linear, name: string, cfg: Gemma4Config, l: number, nKvSliding: number, warnings: string[]): number {
  const rows = k.outFeatures, d = cfg.headDims[l]!, g = cfg.numKvHeads[l]!;
  if (rows === g * d) return g;
  if (cfg.layerTypes[l] === 'full_attention' && !cfg.kEqV[l] && rows === nKvSliding * d) {
    warnings.push(`layer ${l}: k_proj has ${nKvSliding} KV heads (num_key_value_heads), not num_global_key_value_heads ${g}: following the checkpoint`);
    return nKvSliding;
  }
  throw new MlxcelError('E_SHAPE', `${name}.weight: ${rows} rows fit neither ${g} KV heads x head dim ${d} nor the alternative rule (layer ${l}, ${cfg.layerTypes[l]})`);
}

export function loadGemma4Weights(
  store: WeightStore,
  config: Record<string, unknown>,
  cfg: Gemma4Config,
  opts: { sharedQueryOffset?: SharedQueryOffset } = {},
): Gemma4Weights {
  const ld = openTextTower(store, config);
  const warnings = [...cfg.warnings];
  const H = cfg.hiddenSize, NL = cfg.numLayers, P = cfg.hiddenSizePerLayerInput, eps = cfg.eps, nh = cfg.numHeads;
  const embed = ld.embedding('embed_tokens', [cfg.vocabSize, H]);
  const ple =
    P > 0
      ? new PerLayerInputs(
          { numLayers: NL, perLayer: P, hidden: H, vocabPerLayer: cfg.vocabSizePerLayerInput },
          ld.embedding('embed_tokens_per_layer', [cfg.vocabSizePerLayerInput, NL * P]),
          ld.linear('per_layer_model_projection', [NL * P, H]),
          ld.rmsNorm('per_layer_projection_norm', P, eps),
        )
      : null;

  // Owners first: their k_proj fixes the KV geometry, which a shared layer takes from its source.
  const numKvHeads = cfg.numKvHeads.slice();
  const kProj: (Linear | null)[] = cfg.layerTypes.map((_, l) => {
    if (cfg.kvSources[l] !== l) {
      numKvHeads[l] = numKvHeads[cfg.kvSources[l]!]!;
      return null;
    }
    const path = `layers.${l}.self_attn.k_proj`;
    const k = ld.linearRows(path, H);
    numKvHeads[l] = kvHeadsOf(k, ld.name(path), cfg, l, cfg.slidingKvHeads, warnings);
    return k;
  });
  const ropes = ropeTables(new ConfigReader(config, cfg.modelType, { textConfig: true }), cfg.layerTypes, cfg.headDims);

  const layers = cfg.layerTypes.map((type, l): Gemma4Layer => {
    const p = `layers.${l}.`;
    const shared = cfg.kvSources[l] !== l;
    const hd = cfg.headDims[l]!, nkv = numKvHeads[l]!;
    const attn = new GemmaAttention(
      { nHeads: nh, nKvHeads: nkv, headDim: hd, scale: 1, window: type === 'sliding_attention' ? cfg.slidingWindow : null, eps },
      {
        q: ld.linear(`${p}self_attn.q_proj`, [nh * hd, H]),
        o: ld.linear(`${p}self_attn.o_proj`, [H, nh * hd]),
        qNorm: ld.rmsNorm(`${p}self_attn.q_norm`, hd, eps),
        k: kProj[l] ?? null,
        kNorm: shared ? null : ld.rmsNorm(`${p}self_attn.k_norm`, hd, eps),
        v: shared || cfg.kEqV[l] ? null : ld.linear(`${p}self_attn.v_proj`, [nkv * hd, H]),
      },
      ropes.get(type)!,
      l,
      shared,
      opts.sharedQueryOffset,
      cfg.bidirectionalImageSpans && type === 'sliding_attention',
    );
    return {
      attn,
      mlp: loadMlp(ld, cfg, l),
      moe: cfg.moe ? loadMoeBlock(ld, p, cfg, cfg.moe) : null,
      inputNorm: ld.rmsNorm(`${p}input_layernorm`, H, eps),
      postAttnNorm: ld.rmsNorm(`${p}post_attention_layernorm`, H, eps),
      preFfNorm: ld.rmsNorm(`${p}pre_feedforward_layernorm`, H, eps),
      postFfNorm: ld.rmsNorm(`${p}post_feedforward_layernorm`, H, eps),
      pli:
        P > 0
          ? {
              gate: ld.linear(`${p}per_layer_input_gate`, [P, H]),
              projection: ld.linear(`${p}per_layer_projection`, [H, P]),
              norm: ld.rmsNorm(`${p}post_per_layer_input_norm`, H, eps),
            }
          : null,
      layerScalar: ld.has(`${p}layer_scalar`) ? ld.vector(`${p}layer_scalar`, 1)[0]! : 1,
    };
  });
  const norm = ld.rmsNorm('norm', H, eps);
  const head = ld.head(embed, { tied: cfg.tieWordEmbeddings, shape: [cfg.vocabSize, H], paths: HEAD_PATHS });
  return { embed, ple, layers, norm, head, numKvHeads, stats: ld.stats, warnings };
}

/**
 * The dense MLP, its width read from gate_proj and validated against the config rule (§7:
 * 2 × intermediate_size on KV-shared layers with use_double_wide_mlp).
 */
function loadMlp(ld: WeightLoader, cfg: Gemma4Config, l: number): GemmaMLP {
  const p = `layers.${l}.mlp.`, H = cfg.hiddenSize, want = cfg.intermediateSizes[l]!;
  const gate = ld.linearRows(`${p}gate_proj`, H, { ffn: 'input' });
  if (gate.outFeatures !== want)
    throw new MlxcelError(
      'E_SHAPE',
      `${ld.name(`${p}gate_proj`)}.weight: ${gate.outFeatures} rows but the config implies an MLP width of ${want}` +
        (want !== cfg.intermediateSizes[0] ? ' (2 x intermediate_size: use_double_wide_mlp on a KV-shared layer)' : ''),
    );
  return new GemmaMLP(gate, ld.linear(`${p}up_proj`, [want, H], { ffn: 'input' }), ld.linear(`${p}down_proj`, [H, want], { ffn: 'output' }));
}
