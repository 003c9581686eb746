/**
 * A vision model = processor settings + tower + embedder + the prompt token ids, loaded from a Gemma 3n
 * or Gemma 4 checkpoint (HF `model.vision_tower.*` or mlx-vlm `vision_tower.*` names).
 */
import { join } from 'node:path';
import { towerFamily, towerSourceFromDir, type Json, type TowerSource } from '@mlxcel/models-core';
import { MlxcelError, quantConfigOf, type WeightStore } from '@mlxcel/tensor';
import { parseGemma3nVisionConfig, type Gemma3nVisionConfig } from './gemma3n/config.js';
import { Gemma3nVisionEmbedder } from './gemma3n/embedder.js';
import { parseGemma4VisionConfig, type Gemma4VisionConfig } from './gemma4/config.js';
import { Gemma4VisionEmbedder, Gemma4VisionTower } from './gemma4/tower.js';
import { MobileNetV5Encoder } from './mobilenet/tower.js';
import {
  gemma3nProcessorSettings, gemma4ProcessorSettings, mergeProcessorFiles,
  type Gemma3nProcessorSettings, type Gemma4ProcessorSettings,
} from './processor/settings.js';
import { towerStats, type TowerStats } from './stats.js';
import { visionPrefixes } from './weights.js';

export interface Gemma4VisionModel {
  family: 'gemma4';
  config: Gemma4VisionConfig;
  processor: Gemma4ProcessorSettings;
  tower: Gemma4VisionTower;
  embedder: Gemma4VisionEmbedder;
  textHidden: number;
  stats: TowerStats;
}

export interface Gemma3nVisionModel {
  family: 'gemma3n';
  config: Gemma3nVisionConfig;
  processor: Gemma3nProcessorSettings;
  tower: MobileNetV5Encoder;
  embedder: Gemma3nVisionEmbedder;
  textHidden: number;
  stats: TowerStats;
}

export type VisionModel = Gemma4VisionModel | Gemma3nVisionModel;

/**
 * The checkpoint a vision model is built from; `processor` is processor_config.json (its
 * `image_processor` block, overlaid by preprocessor_config).
 */
export type VisionModelSource = TowerSource;

/** The vision family of a config (model_type gemma4 / gemma3n, or their vision_config model types). */
export function visionFamily(config: Json): 'gemma4' | 'gemma3n' {
  return towerFamily(config, 'vision');
}

/** True when the config declares a vision tower. */
export function hasVision(config: Json): boolean {
  return typeof config.vision_config === 'object' && config.vision_config !== null;
}

export function visionModelFrom(src: VisionModelSource): VisionModel {
  const { config, weights } = src;
  const where = src.name ?? 'config';
  if (!hasVision(config)) throw new MlxcelError('E_CONFIG', `${where}: no vision_config (this checkpoint has no vision tower)`);
  const family = visionFamily(config);
  const quant = quantConfigOf(config);
  const pre = mergeProcessorFiles(src.preprocessor, src.processor);
  const pfile = src.name ? join(src.name, 'preprocessor_config.json') : 'preprocessor_config.json';
  const prefixes = visionPrefixes(weights, where);
  const stats = towerStats(weights, [prefixes.tower, prefixes.embed], quant);
  if (family === 'gemma4') {
    const cfg = parseGemma4VisionConfig(config);
    const processor = gemma4ProcessorSettings(pre, pfile);
    if (processor.patchSize !== cfg.patchSize || processor.poolingKernel !== cfg.poolingKernel)
      throw new MlxcelError('E_CONFIG', `${pfile}: patch_size ${processor.patchSize} / pooling_kernel_size ${processor.poolingKernel} differ from vision_config's ${cfg.patchSize} / ${cfg.poolingKernel}`);
    return {
      family, config: cfg, processor, textHidden: cfg.textHidden, stats,
      tower: Gemma4VisionTower.load(weights, prefixes.tower, cfg, quant),
      embedder: Gemma4VisionEmbedder.load(weights, prefixes.embed, cfg, quant),
    };
  }
  const cfg = parseGemma3nVisionConfig(config);
  const processor = gemma3nProcessorSettings(pre, pfile);
  if (processor.imageSeqLength !== cfg.softTokens)
    throw new MlxcelError('E_CONFIG', `${pfile}: image_seq_length ${processor.imageSeqLength} differs from config.vision_soft_tokens_per_image ${cfg.softTokens}`);
  const tower = MobileNetV5Encoder.load(weights, `${prefixes.tower}timm_model.`);
  if (tower.outChannels !== cfg.hidden)
    throw new MlxcelError('E_SHAPE', `${prefixes.tower}timm_model.msfa.norm: ${tower.outChannels} channels but vision_config.hidden_size is ${cfg.hidden}`);
  return {
    family, config: cfg, processor, textHidden: cfg.textHidden, stats, tower,
    embedder: Gemma3nVisionEmbedder.load(weights, prefixes.embed, cfg, quant),
  };
}

/** Loads the vision model of a checkpoint folder (config.json, safetensors, preprocessor/processor configs). */
export function loadVisionModel(dir: string, opts: { weights?: WeightStore } = {}): VisionModel {
  return visionModelFrom(towerSourceFromDir(dir, opts.weights));
}
