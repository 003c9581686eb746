/** Gemma 4 vision_config (the HF forward's keys only) plus the prompt token ids from the top level. */
import { MlxcelError } from '@mlxcel/tensor';
import { Cfg, type Json } from '../config-read.js';

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
  const top = new Cfg(config, 'config');
  const v = top.sub('vision_config');
  const rope = v.has('rope_parameters') ? v.sub('rope_parameters') : null;
  if (rope && rope.has('rope_type') && rope.str('rope_type') !== 'default')
    throw new MlxcelError('E_CONFIG', `config.vision_config.rope_parameters.rope_type "${rope.str('rope_type')}" is not supported (default only)`);
  const heads = v.int('num_attention_heads', undefined, 1);
  const kvHeads = v.int('num_key_value_heads', heads, 1);
  if (heads % kvHeads) throw new MlxcelError('E_CONFIG', `config.vision_config: num_attention_heads ${heads} is not a multiple of num_key_value_heads ${kvHeads}`);
  const headDim = v.int('head_dim', undefined, 2);
  if (headDim % 4) throw new MlxcelError('E_CONFIG', `config.vision_config.head_dim ${headDim}: 2-D RoPE needs a multiple of 4`);
  return {
    hidden: v.int('hidden_size', undefined, 1),
    numLayers: v.int('num_hidden_layers', undefined, 1),
    numHeads: heads,
    numKvHeads: kvHeads,
    headDim,
    intermediate: v.int('intermediate_size', undefined, 1),
    patchSize: v.int('patch_size', 16, 1),
    poolingKernel: v.int('pooling_kernel_size', 3, 1),
    positionEmbeddingSize: v.int('position_embedding_size', 10240, 1),
    ropeTheta: rope ? rope.num('rope_theta', 100) : 100,
    eps: v.num('rms_norm_eps', 1e-6),
    useClippedLinears: v.bool('use_clipped_linears', false),
    standardize: v.bool('standardize', false),
    textHidden: top.sub('text_config').int('hidden_size', undefined, 1),
    tokens: { boi: top.int('boi_token_id', 255999), image: top.int('image_token_id', 258880), eoi: top.int('eoi_token_id', 258882) },
  };
}
