/** Gemma 4 vision_config (the HF forward's keys only) plus the prompt token ids from the top level. */
import { ConfigReader, type Json } from '@mlxcel/models-core';

export interface Gemma4VisionConfig {
  hidden: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediate: number;
  patchSize: number;
  poolingKernel: number;
  positionEmbeddingSize: number;
  ropeTheta: number;
  eps: number;
  useClippedLinears: boolean;
  standardize: boolean;
  /** Text hidden size (the embedder's output width). */
  textHidden: number;
  tokens: { boi: number; image: number; eoi: number };
}

export function parseGemma4VisionConfig(config: Json): Gemma4VisionConfig {
  const top = new ConfigReader(config, 'gemma4');
  const v = top.sub('vision_config');
  const rope = v.has('rope_parameters') ? v.sub('rope_parameters') : null;
  if (rope && rope.has('rope_type')) rope.oneOf('rope_type', ['default']);
  const heads = v.int('num_attention_heads');
  const kvHeads = v.int('num_key_value_heads', { default: heads });
  if (heads % kvHeads) v.fail('num_key_value_heads', `= ${kvHeads} does not divide num_attention_heads = ${heads}`);
  const headDim = v.int('head_dim', { min: 2 });
  if (headDim % 4) v.fail('head_dim', `= ${headDim}: 2-D RoPE needs a multiple of 4`);
  const id = (key: string, dflt: number) => top.int(key, { default: dflt, min: 0 });
  return {
    hidden: v.int('hidden_size'),
    numLayers: v.int('num_hidden_layers'),
    numHeads: heads,
    numKvHeads: kvHeads,
    headDim,
    intermediate: v.int('intermediate_size'),
    patchSize: v.int('patch_size', { default: 16 }),
    poolingKernel: v.int('pooling_kernel_size', { default: 3 }),
    positionEmbeddingSize: v.int('position_embedding_size', { default: 10240 }),
    ropeTheta: rope ? rope.num('rope_theta', { default: 100 }) : 100,
    eps: v.num('rms_norm_eps', { default: 1e-6 }),
    useClippedLinears: v.bool('use_clipped_linears', false),
    standardize: v.bool('standardize', false),
    textHidden: top.sub('text_config').int('hidden_size'),
    tokens: { boi: id('boi_token_id', 255999), image: id('image_token_id', 258880), eoi: id('eoi_token_id', 258882) },
  };
}
