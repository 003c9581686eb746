/** Gemma 4 audio tower settings (`audio_config`, Gemma4AudioConfig) and the multimodal token ids. */
import { MlxcelError } from '@mlxcel/tensor';
import { ConfigReader, type Json } from '../config-util.js';

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
  const top = new ConfigReader(config, 'config');
  const a = top.sub('audio_config');
  const hidden = a.int('hidden_size', undefined, 1);
  const heads = a.int('num_attention_heads', undefined, 1);
  if (hidden % heads) throw new MlxcelError('E_CONFIG', `config.audio_config: hidden_size ${hidden} is not divisible by num_attention_heads ${heads}`);
  const act = a.str('hidden_act', 'silu');
  if (act !== 'silu' && act !== 'swish') throw new MlxcelError('E_CONFIG', `config.audio_config.hidden_act: "${act}" is not supported (silu)`);
  const ch = a.ints('subsampling_conv_channels', 2, [128, 32]);
  const textHidden = top.sub('text_config').int('hidden_size', undefined, 1);
  return {
    hidden,
    heads,
    headDim: hidden / heads,
    layers: a.int('num_hidden_layers', undefined, 1),
    channels: [ch[0]!, ch[1]!],
    convKernel: a.int('conv_kernel_size', 5, 1),
    residualWeight: a.num('residual_weight', 0.5),
    chunk: a.int('attention_chunk_size', 12, 1),
    contextLeft: a.int('attention_context_left', 13, 0),
    contextRight: a.int('attention_context_right', 0, 0),
    logitCap: a.num('attention_logit_cap', 50),
    useClippedLinears: a.bool('use_clipped_linears', true),
    eps: a.num('rms_norm_eps', 1e-6),
    gradientClipping: a.num('gradient_clipping', 1e10),
    outputDims: a.int('output_proj_dims', hidden, 1),
    nMel: opts.nMel ?? 128,
    textHidden,
    tokens: {
      boa: top.int('boa_token_id', 256000),
      audio: top.int('audio_token_id', 258881),
      eoa: top.has('eoa_token_id') ? top.int('eoa_token_id') : top.int('eoa_token_index', 258883),
    },
    maxTokens: opts.maxTokens ?? 750,
  };
}
