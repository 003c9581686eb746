/**
 * Gemma 4 text config (`gemma4` → `text_config`, or top-level `gemma4_text`), docs/architecture/gemma4.md §2–§3.
 * Released configs specify every key; a missing required key is an error rather than either
 * library's (conflicting) default.
 */
import { ConfigReader, type Json } from '@mlxcel/models-core';
import { kvSources, normalizeLayerTypes, type LayerType } from '../common/layer-types.js';

export interface Gemma4MoeConfig {
  numExperts: number;
  topK: number;
  /** I_m, the expert MLP width. */
  intermediate: number;
}

export interface Gemma4Config {
  modelType: string;
  hiddenSize: number;
  numLayers: number;
  /** Dense MLP width per layer (2 × intermediate_size on KV-shared layers with use_double_wide_mlp, §7). */
  intermediateSizes: number[];
  numHeads: number;
  /** Per layer: KV heads (num_global_key_value_heads on full layers when set, §6.2) and head dim. */
  numKvHeads: number[];
  /** num_key_value_heads (sliding layers). */
  slidingKvHeads: number;
  headDims: number[];
  /** Per layer: V comes from the K projection (attention_k_eq_v, full layers only, §6.3). */
  kEqV: boolean[];
  eps: number;
  vocabSize: number;
  /** 0 = no per-layer inputs. */
  hiddenSizePerLayerInput: number;
  vocabSizePerLayerInput: number;
  layerTypes: LayerType[];
  slidingWindow: number;
  maxPositionEmbeddings: number;
  finalLogitSoftcapping: number | null;
  numKvSharedLayers: number;
  kvSources: number[];
  moe: Gemma4MoeConfig | null;
  tieWordEmbeddings: boolean;
  /** Warnings worth surfacing (absent layer_types, a last layer that is not full). */
  warnings: string[];
}

export function parseGemma4Config(config: Json): Gemma4Config {
  const c = new ConfigReader(config, typeof config.model_type === 'string' ? config.model_type : 'gemma4', { textConfig: true });
  const modelType = typeof config.model_type === 'string' ? config.model_type : 'gemma4';
  const warnings: string[] = [];
  const numLayers = c.int('num_hidden_layers');
  const hiddenSize = c.int('hidden_size');
  const numHeads = c.int('num_attention_heads');
  const act = c.raw('hidden_activation') ?? c.raw('hidden_act');
  if (act !== undefined && act !== null && act !== 'gelu_pytorch_tanh')
    c.fail('hidden_activation', `= ${JSON.stringify(act)} is not supported (only gelu_pytorch_tanh)`, 'E_CONFIG_UNSUPPORTED');

  // §3: absent → require sliding_window_pattern and use the mlx rule (pattern − 1 sliding, then 1 full).
  const layerTypes = normalizeLayerTypes(c, numLayers, (n) => {
    if (!c.has('sliding_window_pattern'))
      c.fail('layer_types', 'is absent, and there is no sliding_window_pattern to derive it from', 'E_CONFIG_MISSING');
    const pat = c.int('sliding_window_pattern');
    warnings.push(`${c.key('layer_types')} is absent: derived from sliding_window_pattern ${pat} (mlx-lm rule)`);
    return Array.from({ length: n }, (_, i) => ((i + 1) % pat === 0 ? 'full_attention' : 'sliding_attention'));
  });
  if (layerTypes[numLayers - 1] !== 'full_attention')
    warnings.push(`the last layer is ${layerTypes[numLayers - 1]}; HF would force it to full_attention, mlx-lm keeps it (kept)`);

  const headDim = c.int('head_dim');
  const globalHeadDim = globalHeadDimOf(c, layerTypes, headDim);
  const nKv = c.int('num_key_value_heads');
  // §6.2: the global count applies to full layers whenever set, independently of attention_k_eq_v.
  const nKvGlobal = c.has('num_global_key_value_heads') ? c.int('num_global_key_value_heads') : nKv;
  const kEqV = c.bool('attention_k_eq_v', false);
  const numKvHeads = layerTypes.map((t) => (t === 'full_attention' ? nKvGlobal : nKv));
  numKvHeads.forEach((g, l) => {
    if (numHeads % g)
      c.fail(
        (layerTypes[l] === 'full_attention' && c.has('num_global_key_value_heads') ? 'num_global_key_value_heads' : 'num_key_value_heads'),
        `${g} does not divide num_attention_heads ${numHeads}`,
      );
  });

  const numKvSharedLayers = c.int('num_kv_shared_layers', { min: 0, default: 0 });
  const sources = kvSources(c, layerTypes, numKvSharedLayers);
  const I = c.int('intermediate_size');
  const doubleWide = c.bool('use_double_wide_mlp', false);
  const first = numLayers - numKvSharedLayers;
  const P = c.has('hidden_size_per_layer_input') ? c.int('hidden_size_per_layer_input', { min: 0 }) : 0;

  let moe: Gemma4MoeConfig | null = null;
  if (c.bool('enable_moe_block', false)) {
    const numExperts = c.int('num_experts');
    const topK = c.int('top_k_experts');
    if (topK > numExperts) c.fail('top_k_experts', `${topK} exceeds num_experts ${numExperts}`);
    const key = c.has('moe_intermediate_size') ? 'moe_intermediate_size' : 'expert_intermediate_size';
    moe = { numExperts, topK, intermediate: c.int(key) };
  }

  const cfg: Gemma4Config = {
    modelType,
    hiddenSize,
    numLayers,
    intermediateSizes: layerTypes.map((_, l) => (doubleWide && numKvSharedLayers > 0 && l >= first ? 2 * I : I)),
    numHeads,
    numKvHeads,
    slidingKvHeads: nKv,
    headDims: layerTypes.map((t) => (t === 'full_attention' ? globalHeadDim : headDim)),
    kEqV: layerTypes.map((t) => kEqV && t === 'full_attention'),
    eps: c.num('rms_norm_eps', { default: 1e-6, positive: true }),
    vocabSize: c.int('vocab_size'),
    hiddenSizePerLayerInput: P,
    vocabSizePerLayerInput: P > 0 ? c.int('vocab_size_per_layer_input') : 0,
    layerTypes,
    slidingWindow: c.int('sliding_window'),
    maxPositionEmbeddings: c.int('max_position_embeddings', { default: 131072 }),
    finalLogitSoftcapping: c.optNum('final_logit_softcapping'),
    numKvSharedLayers,
    kvSources: sources,
    moe,
    tieWordEmbeddings: typeof config.tie_word_embeddings === 'boolean' ? config.tie_word_embeddings : c.bool('tie_word_embeddings', true),
    warnings,
  };
  if (cfg.finalLogitSoftcapping !== null && !(cfg.finalLogitSoftcapping > 0))
    c.fail('final_logit_softcapping', `must be > 0 or null, got ${cfg.finalLogitSoftcapping}`);
  return cfg;
}

/**
 * Head dim of full layers (§2): `global_head_dim` when set and non-zero, else
 * `per_layer_config[i].head_dim` of a full layer (newer HF serializations), else `head_dim`.
 */
function globalHeadDimOf(c: ConfigReader, types: readonly LayerType[], headDim: number): number {
  if (c.has('global_head_dim') && c.raw('global_head_dim') !== 0) return c.int('global_head_dim');
  const plc = c.raw('per_layer_config');
  if (plc && typeof plc === 'object') {
    const full = types.indexOf('full_attention');
    const entry = (plc as Record<string, { head_dim?: unknown }>)[String(full)];
    if (full >= 0 && entry && entry.head_dim !== undefined) {
      if (typeof entry.head_dim !== 'number' || !Number.isInteger(entry.head_dim) || entry.head_dim < 1)
        c.fail(`per_layer_config.${full}.head_dim`, `must be a positive integer, got ${JSON.stringify(entry.head_dim)}`);
      return entry.head_dim;
    }
  }
  return headDim;
}
