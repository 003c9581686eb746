/**
 * An audio model = feature extractor settings + encoder + embedder + the prompt token ids, loaded from
 * a Gemma 3n or Gemma 4 checkpoint (HF `model.audio_tower.*` or mlx-vlm `audio_tower.*` names).
 */
import { towerFamily, towerSourceFromDir, type Json, type TowerSource } from '@mlxcel/models-core';
import { MlxcelError, quantConfigOf } from '@mlxcel/tensor';
import { parseGemma3nAudioConfig, type Gemma3nAudioConfig } from './gemma3n/config.js';
import { Gemma3nAudioEmbedder, Gemma3nAudioEncoder } from './gemma3n/encoder.js';
import { parseGemma4AudioConfig, type Gemma4AudioConfig } from './gemma4/config.js';
import { Gemma4AudioEmbedder, Gemma4AudioEncoder } from './gemma4/encoder.js';
import { melConfig, type MelConfig } from './mel/config.js';
import { audioPrefixes } from './weights.js';

export interface Gemma4AudioModel {
  family: 'gemma4';
  config: Gemma4AudioConfig;
  mel: MelConfig;
  encoder: Gemma4AudioEncoder;
  embedder: Gemma4AudioEmbedder;
  /** Text embedding width of the soft tokens. */
  textHidden: number;
}

export interface Gemma3nAudioModel {
  family: 'gemma3n';
  config: Gemma3nAudioConfig;
  mel: MelConfig;
  encoder: Gemma3nAudioEncoder;
  embedder: Gemma3nAudioEmbedder;
  textHidden: number;
}

export type AudioModel = Gemma4AudioModel | Gemma3nAudioModel;

/**
 * The checkpoint an audio model is built from; `preprocessor` holds the feature extractor overrides,
 * `processor` Gemma 4's `audio_seq_length`.
 */
export type AudioModelSource = TowerSource;

/** The audio family of a config: model_type gemma4 / gemma3n (or their audio_config model types). */
export function audioFamily(config: Json): 'gemma4' | 'gemma3n' {
  return towerFamily(config, 'audio');
}

/** Builds the audio model from an opened checkpoint. */
export function audioModelFrom(src: AudioModelSource): AudioModel {
  const { config, weights } = src;
  if (!config.audio_config) throw new MlxcelError('E_CONFIG', `${src.name ?? 'config'}: no audio_config (this checkpoint has no audio tower)`);
  const family = audioFamily(config);
  const quant = quantConfigOf(config);
  const prefixes = audioPrefixes(weights, src.name);
  const mel = melConfig(family, src.preprocessor ?? {});
  if (family === 'gemma4') {
    const seq = src.processor?.audio_seq_length ?? undefined;
    if (seq !== undefined && !(Number.isInteger(seq) && (seq as number) > 0))
      throw new MlxcelError('E_CONFIG', `processor_config.json: audio_seq_length must be a positive integer, got ${JSON.stringify(seq)}`);
    const cfg = parseGemma4AudioConfig(config, { nMel: mel.nMel, maxTokens: seq as number | undefined });
    return {
      family, config: cfg, mel, textHidden: cfg.textHidden,
      encoder: Gemma4AudioEncoder.load(weights, prefixes.tower, cfg, quant),
      embedder: Gemma4AudioEmbedder.load(weights, prefixes.embed, cfg, quant),
    };
  }
  const cfg = parseGemma3nAudioConfig(config);
  if (cfg.nMel !== mel.nMel)
    throw new MlxcelError('E_CONFIG', `audio_config.input_feat_size ${cfg.nMel} differs from the feature extractor's feature_size ${mel.nMel}`);
  return {
    family, config: cfg, mel, textHidden: cfg.textHidden,
    encoder: Gemma3nAudioEncoder.load(weights, prefixes.tower, cfg, quant),
    embedder: Gemma3nAudioEmbedder.load(weights, prefixes.embed, cfg, quant),
  };
}

/** Loads the audio model of a checkpoint folder (config.json, safetensors, optional preprocessor/processor configs). */
export function loadAudioModel(dir: string): AudioModel {
  return audioModelFrom(towerSourceFromDir(dir));
}
