/** Gemma 3n vision_config and the image token ids. */
import { ConfigReader, type Json } from '@mlxcel/models-core';

export interface Gemma3nVisionConfig {
  /** MSFA output channels (vision_config.hidden_size); the soft tokens are scaled by √hidden. */
  hidden: number;
  /** ε of the embedder norms (vision_config.rms_norm_eps); the tower itself uses 1e-6. */
  eps: number;
  /** First id of the hard vision vocabulary and its size ([vocabOffset, vocabOffset + vocabSize)). */
  vocabOffset: number;
  vocabSize: number;
  softTokens: number;
  textHidden: number;
  tokens: { boi: number; image: number; eoi: number };
}

export function parseGemma3nVisionConfig(config: Json): Gemma3nVisionConfig {
  const top = new ConfigReader(config, 'gemma3n');
  const v = top.sub('vision_config');
  v.oneOf('architecture', ['mobilenetv5_300m_enc'], 'mobilenetv5_300m_enc');
  v.requireFlag('do_pooling', false, 'Gemma 3n uses the unpooled 16x16 map');
  const id = (key: string, dflt: number) => top.int(key, { default: dflt, min: 0 });
  return {
    hidden: v.int('hidden_size', { default: 2048 }),
    eps: v.num('rms_norm_eps', { default: 1e-6 }),
    vocabOffset: v.int('vocab_offset', { default: 262144, min: 0 }),
    vocabSize: v.int('vocab_size', { default: 128 }),
    softTokens: top.int('vision_soft_tokens_per_image', { default: 256 }),
    textHidden: top.sub('text_config').int('hidden_size'),
    tokens: { boi: id('boi_token_id', 255999), image: id('image_token_id', 262145), eoi: id('eoi_token_id', 262144) },
  };
}
