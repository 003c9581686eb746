/** Gemma 3n vision_config and the image token ids. */
import { MlxcelError } from '@mlxcel/tensor';
import { Cfg, type Json } from '../config-read.js';

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
  const top = new Cfg(config, 'config');
  const v = top.sub('vision_config');
  const arch = v.str('architecture', 'mobilenetv5_300m_enc');
  if (arch !== 'mobilenetv5_300m_enc')
    throw new MlxcelError('E_CONFIG', `config.vision_config.architecture "${arch}" is not supported (mobilenetv5_300m_enc only)`);
  if (v.has('do_pooling') && v.bool('do_pooling'))
    throw new MlxcelError('E_CONFIG', 'config.vision_config.do_pooling true is not supported (Gemma 3n uses the unpooled 16x16 map)');
  return {
    hidden: v.int('hidden_size', 2048, 1),
    eps: v.num('rms_norm_eps', 1e-6),
    vocabOffset: v.int('vocab_offset', 262144),
    vocabSize: v.int('vocab_size', 128, 1),
    softTokens: top.int('vision_soft_tokens_per_image', 256, 1),
    textHidden: top.sub('text_config').int('hidden_size', undefined, 1),
    tokens: { boi: top.int('boi_token_id', 255999), image: top.int('image_token_id', 262145), eoi: top.int('eoi_token_id', 262144) },
  };
}
