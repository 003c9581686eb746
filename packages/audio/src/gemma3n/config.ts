/** Gemma 3n audio tower settings (`audio_config`, Gemma3nAudioConfig) and the multimodal token ids. */
import { ConfigReader, type Json } from '@mlxcel/models-core';

export interface Gemma3nAudioConfig {
  hidden: number;
  heads: number;
  headDim: number;
  layers: number;
  nMel: number;
  /** Subsampler output channels, kernels [kh, kw] and strides [sh, sw] per block. */
  channels: [number, number];
  kernels: [[number, number], [number, number]];
  strides: [[number, number], [number, number]];
  groupNormEps: number;
  chunk: number;
  contextLeft: number;
  contextRight: number;
  logitCap: number;
  convKernel: number;
  reductionFactor: number;
  residualWeight: number;
  eps: number;
  gradientClipping: number;
  /** Hard audio token rows: ids vocabOffset .. vocabOffset + vocabSize - 1. */
  vocabOffset: number;
  vocabSize: number;
  textHidden: number;
  /** Text vocab size; id textVocabSize - 1 is the audio padding token. */
  textVocabSize: number;
  /** Soft tokens per clip (always this many placeholders). */
  softTokens: number;
  tokens: { boa: number; audio: number; eoa: number };
}

export function parseGemma3nAudioConfig(config: Json): Gemma3nAudioConfig {
  const top = new ConfigReader(config, 'gemma3n');
  const a = top.sub('audio_config');
  const text = top.sub('text_config');
  const hidden = a.int('hidden_size');
  const heads = a.int('conf_num_attention_heads');
  if (hidden % heads) a.fail('conf_num_attention_heads', `= ${heads} does not divide hidden_size = ${hidden}`);
  const ch = a.intList('sscp_conv_channel_size', 2, { default: [128, 32] });
  const pair = (key: string, dflt: number[][]): [[number, number], [number, number]] => {
    const v = a.raw(key) ?? dflt;
    const ok = Array.isArray(v) && v.length === 2 && v.every((p) => Array.isArray(p) && p.length === 2 && p.every((x) => Number.isInteger(x) && x > 0));
    if (!ok) a.fail(key, `must be [[h, w], [h, w]] of positive integers, got ${JSON.stringify(v)}`);
    const q = v as number[][];
    return [[q[0]![0]!, q[0]![1]!], [q[1]![0]!, q[1]![1]!]];
  };
  const id = (key: string, dflt: number) => top.int(key, { default: dflt, min: 0 });
  const cfg: Gemma3nAudioConfig = {
    hidden,
    heads,
    headDim: hidden / heads,
    layers: a.int('conf_num_hidden_layers'),
    nMel: a.int('input_feat_size', { default: 128 }),
    channels: [ch[0]!, ch[1]!],
    kernels: pair('sscp_conv_kernel_size', [[3, 3], [3, 3]]),
    strides: pair('sscp_conv_stride_size', [[2, 2], [2, 2]]),
    groupNormEps: a.num('sscp_conv_group_norm_eps', { default: 1e-3 }),
    chunk: a.int('conf_attention_chunk_size', { default: 12 }),
    contextLeft: a.int('conf_attention_context_left', { default: 13, min: 0 }),
    contextRight: a.int('conf_attention_context_right', { default: 0, min: 0 }),
    logitCap: a.num('conf_attention_logit_cap', { default: 50 }),
    convKernel: a.int('conf_conv_kernel_size', { default: 5 }),
    reductionFactor: a.int('conf_reduction_factor', { default: 4 }),
    residualWeight: a.num('conf_residual_weight', { default: 0.5 }),
    eps: a.num('rms_norm_eps', { default: 1e-6 }),
    gradientClipping: a.num('gradient_clipping', { default: 1e10 }),
    vocabOffset: a.int('vocab_offset', { default: 262272, min: 0 }),
    vocabSize: a.int('vocab_size', { default: 128 }),
    textHidden: text.int('hidden_size'),
    textVocabSize: text.int('vocab_size', { default: 262400 }),
    softTokens: top.int('audio_soft_tokens_per_image', { default: 188 }),
    tokens: { boa: id('boa_token_id', 256000), audio: id('audio_token_id', 262273), eoa: id('eoa_token_id', 262272) },
  };
  const pad = cfg.textVocabSize - 1;
  if (pad < cfg.vocabOffset || pad >= cfg.vocabOffset + cfg.vocabSize)
    a.fail('vocab_offset', `= ${cfg.vocabOffset}: the audio padding id text_config.vocab_size - 1 = ${pad} is outside the audio embedder rows ${cfg.vocabOffset}..${cfg.vocabOffset + cfg.vocabSize - 1}`);
  return cfg;
}
