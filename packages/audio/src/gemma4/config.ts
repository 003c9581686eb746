/** Gemma 4 audio tower settings (`audio_config`, Gemma4AudioConfig) and the multimodal token ids. */
import { ConfigReader, type Json } from '@mlxcel/models-core';

export interface Gemma4AudioConfig {
  hidden: number;
  heads: number;
  headDim: number;
  layers: number;
  /** Output channels of the two subsampling convs. */
  channels: [number, number];
  convKernel: number;
  residualWeight: number;
  chunk: number;
  contextLeft: number;
  contextRight: number;
  logitCap: number;
  useClippedLinears: boolean;
  eps: number;
  gradientClipping: number;
  outputDims: number;
  /** Mel bins entering the tower. */
  nMel: number;
  /** Text model hidden size (the embedder's output). */
  textHidden: number;
  tokens: { boa: number; audio: number; eoa: number };
  /** Processor cap on audio soft tokens per clip. */
  maxTokens: number;
}

export function parseGemma4AudioConfig(config: Json, opts: { nMel?: number; maxTokens?: number } = {}): Gemma4AudioConfig {
  const top = new ConfigReader(config, 'gemma4');
  const a = top.sub('audio_config');
  const hidden = a.int('hidden_size');
  const heads = a.int('num_attention_heads');
  if (hidden % heads) a.fail('num_attention_heads', `= ${heads} does not divide hidden_size = ${hidden}`);
  a.oneOf('hidden_act', ['silu', 'swish'], 'silu');
  const ch = a.intList('subsampling_conv_channels', 2, { default: [128, 32] });
  const textHidden = top.sub('text_config').int('hidden_size');
  const id = (key: string, dflt: number) => top.int(key, { default: dflt, min: 0 });
  return {
    hidden,
    heads,
    headDim: hidden / heads,
    layers: a.int('num_hidden_layers'),
    channels: [ch[0]!, ch[1]!],
    convKernel: a.int('conv_kernel_size', { default: 5 }),
    residualWeight: a.num('residual_weight', { default: 0.5 }),
    chunk: a.int('attention_chunk_size', { default: 12 }),
    contextLeft: a.int('attention_context_left', { default: 13, min: 0 }),
    contextRight: a.int('attention_context_right', { default: 0, min: 0 }),
    logitCap: a.num('attention_logit_cap', { default: 50 }),
    useClippedLinears: a.bool('use_clipped_linears', true),
    eps: a.num('rms_norm_eps', { default: 1e-6 }),
    gradientClipping: a.num('gradient_clipping', { default: 1e10 }),
    outputDims: a.int('output_proj_dims', { default: hidden }),
    nMel: opts.nMel ?? 128,
    textHidden,
    tokens: {
      boa: id('boa_token_id', 256000),
      audio: id('audio_token_id', 258881),
      eoa: top.has('eoa_token_id') ? top.int('eoa_token_id', { min: 0 }) : id('eoa_token_index', 258883),
    },
    maxTokens: opts.maxTokens ?? 750,
  };
}
