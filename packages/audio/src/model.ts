/**
 * An audio model = feature extractor settings + encoder + embedder + the prompt token ids, loaded from
 * a Gemma 3n or Gemma 4 checkpoint (HF `model.audio_tower.*` or mlx-vlm `audio_tower.*` names).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Checkpoint, MlxcelError, quantConfigOf, type WeightStore } from '@mlxcel/tensor';
import type { Json } from './config-util.js';
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

export interface AudioModelSource {
  config: Json;
  weights: WeightStore;
  /** preprocessor_config.json (feature extractor overrides), when the checkpoint has one. */
  preprocessor?: Json;
  /** processor_config.json (Gemma 4 `audio_seq_length`), when present. */
  processor?: Json;
  /** Name used in error messages. */
  name?: string;
}

/** The audio family of a config: model_type gemma4 / gemma3n (or their audio_config model types). */
export function audioFamily(config: Json): 'gemma4' | 'gemma3n' {
  const mt = String(config.model_type ?? '');
  const at = String((config.audio_config as Json | undefined)?.model_type ?? '');
  if (mt === 'gemma4' || at === 'gemma4_audio') return 'gemma4';
  if (mt === 'gemma3n' || at === 'gemma3n_audio') return 'gemma3n';
  throw new MlxcelError('E_CONFIG', `config.model_type "${mt}" has no supported audio tower (gemma4 or gemma3n)`);
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

function readJson(path: string): Json | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Json;
  } catch (e) {
    throw new MlxcelError('E_CONFIG', `${path}: not valid JSON (${(e as Error).message})`);
  }
}

/** Loads the audio model of a checkpoint folder (config.json, safetensors, optional preprocessor/processor configs). */
export function loadAudioModel(dir: string): AudioModel {
  const config = readJson(join(dir, 'config.json'));
  if (!config) throw new MlxcelError('E_FILE', `${dir}: no config.json`);
  return audioModelFrom({
    config,
    weights: Checkpoint.open(dir),
    preprocessor: readJson(join(dir, 'preprocessor_config.json')),
    processor: readJson(join(dir, 'processor_config.json')),
    name: dir,
  });
}
