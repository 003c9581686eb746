/** The Gemma 3n architecture: `gemma3n` (multimodal checkpoints, text tower) and `gemma3n_text`. */
import { TrackedWeights, type ArchitectureDef, type LoadContext } from '@mlxcel/tensor';
import { checkAllTextTensorsUsed, checkLayerCount, checkLayerTypesComplete } from '../common/checkpoint-checks.js';
import { parseGemma3nConfig } from './config.js';
import type { GemmaLoadOptions } from '../common/attention.js';
import { Gemma3nModel } from './model.js';
import { gemma3nRandomWeights } from './random.js';
import { loadGemma3nWeights } from './weights.js';

export function loadGemma3n(ctx: LoadContext, opts: GemmaLoadOptions = {}): Gemma3nModel {
  checkLayerCount(ctx.weights, ctx.config, 'gemma3n');  // before parsing: nothing per-layer is allocated yet
  if (ctx.dir !== undefined) checkLayerTypesComplete(ctx.config, 'gemma3n');  // a checkpoint folder, not random test weights
  const cfg = parseGemma3nConfig(ctx.config);
  const tracked = new TrackedWeights(ctx.weights);
  const model = new Gemma3nModel(ctx.config, cfg, loadGemma3nWeights(tracked, ctx.config, cfg, opts));
  checkAllTextTensorsUsed(tracked, 'gemma3n', cfg);
  return model;
}

export const gemma3n: ArchitectureDef = {
  modelTypes: ['gemma3n', 'gemma3n_text'],
  load: (ctx) => loadGemma3n(ctx),
  randomWeights: (config, opts) => gemma3nRandomWeights(config, opts),
};
