/**
 * Gemma 3n text config (`gemma3n` → `text_config`, or top-level `gemma3n_text`), docs/architecture/gemma3n.md §1.
 */
import { ConfigReader, type Json } from '@mlxcel/models-core';
import { kvSources, normalizeLayerTypes, type LayerType } from '../common/layer-types.js';

export interface Gemma3nConfig {
  modelType: string;
  hiddenSize: number;
  numLayers: number;
  /** One per layer (an int in config.json is expanded). */
  intermediateSizes: number[];
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  eps: number;
  vocabSize: number;
  vocabSizePerLayerInput: number;
  /** P. */
  hiddenSizePerLayerInput: number;
  layerTypes: LayerType[];
  slidingWindow: number;
  maxPositionEmbeddings: number;
  finalLogitSoftcapping: number | null;
  numKvSharedLayers: number;
  /** Layer whose cache each layer reads (itself when it owns one). */
  kvSources: number[];
  altupNumInputs: number;
  altupActiveIdx: number;
  altupCoefClip: number | null;
  altupCorrectScale: boolean;
  laurelRank: number;
  activationSparsity: number[];
  tieWordEmbeddings: boolean;
}

/** HF default when `layer_types` is absent: full iff (i + 1) % 5 == 0 (docs/architecture/gemma3n.md §1). */
function defaultTypes(n: number): LayerType[] {
  return Array.from({ length: n }, (_, i) => ((i + 1) % 5 === 0 ? 'full_attention' : 'sliding_attention'));
}

export function parseGemma3nConfig(config: Json): Gemma3nConfig {
  const c = new ConfigReader(config, typeof config.model_type === 'string' ? config.model_type : 'gemma3n', { textConfig: true });
  const modelType = typeof config.model_type === 'string' ? config.model_type : 'gemma3n';
  const numLayers = c.int('num_hidden_layers');
  const hiddenSize = c.int('hidden_size');
  const numHeads = c.int('num_attention_heads');
  const numKvHeads = c.int('num_key_value_heads');
  if (numHeads % numKvHeads)
    c.fail('num_key_value_heads', `${numKvHeads} does not divide num_attention_heads ${numHeads}`);
  const layerTypes = normalizeLayerTypes(c, numLayers, defaultTypes);
  const numKvSharedLayers = c.int('num_kv_shared_layers', { min: 0, default: 0 });
  const act = c.raw('hidden_activation') ?? c.raw('hidden_act');
  if (act !== undefined && act !== null && act !== 'gelu_pytorch_tanh')
    c.fail('hidden_activation', `= ${JSON.stringify(act)} is not supported (only gelu_pytorch_tanh)`, 'E_CONFIG_UNSUPPORTED');

  // HF default: the first 10 layers 0.95 when there are more than 10 layers (docs/architecture/gemma3n.md §1).
  const sparsity = c.has('activation_sparsity_pattern')
    ? c.numList('activation_sparsity_pattern', numLayers)
    : Array.from({ length: numLayers }, (_, i) => (numLayers > 10 && i < 10 ? 0.95 : 0));
  sparsity.forEach((s, i) => {
    if (!(s >= 0 && s < 1)) c.fail(`activation_sparsity_pattern[${i}]`, `must be in [0, 1), got ${s}`);
  });

  const altupNumInputs = c.int('altup_num_inputs', { default: 4 });
  const altupActiveIdx = c.int('altup_active_idx', { min: 0, default: 0 });
  if (altupActiveIdx !== 0)
    c.fail('altup_active_idx', `= ${altupActiveIdx} is not supported (only 0, as in every released checkpoint)`, 'E_CONFIG_UNSUPPORTED');
  const cfg: Gemma3nConfig = {
    modelType,
    hiddenSize,
    numLayers,
    intermediateSizes: c.intPerLayer('intermediate_size', numLayers),
    numHeads,
    numKvHeads,
    headDim: c.int('head_dim', { default: Math.floor(hiddenSize / numHeads) }),
    eps: c.num('rms_norm_eps', { default: 1e-6, positive: true }),
    vocabSize: c.int('vocab_size'),
    vocabSizePerLayerInput: c.int('vocab_size_per_layer_input'),
    hiddenSizePerLayerInput: c.int('hidden_size_per_layer_input'),
    layerTypes,
    slidingWindow: c.int('sliding_window'),
    maxPositionEmbeddings: c.int('max_position_embeddings', { default: 32768 }),
    finalLogitSoftcapping: c.optNum('final_logit_softcapping'),
    numKvSharedLayers,
    kvSources: kvSources(c, layerTypes, numKvSharedLayers),
    altupNumInputs,
    altupActiveIdx,
    altupCoefClip: c.optNum('altup_coef_clip'),
    altupCorrectScale: c.bool('altup_correct_scale', true),
    laurelRank: c.int('laurel_rank', { default: 64 }),
    activationSparsity: sparsity,
    tieWordEmbeddings: typeof config.tie_word_embeddings === 'boolean' ? config.tie_word_embeddings : c.bool('tie_word_embeddings', true),
  };
  if (cfg.vocabSizePerLayerInput > cfg.vocabSize)
    c.fail('vocab_size_per_layer_input', `${cfg.vocabSizePerLayerInput} exceeds vocab_size ${cfg.vocabSize}`);
  if (cfg.finalLogitSoftcapping !== null && !(cfg.finalLogitSoftcapping > 0))
    c.fail('final_logit_softcapping', `must be > 0 or null, got ${cfg.finalLogitSoftcapping}`);
  return cfg;
}
