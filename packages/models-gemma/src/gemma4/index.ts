/** The Gemma 4 architecture: `gemma4` (multimodal checkpoints, text tower) and `gemma4_text`. */
import { TrackedWeights, type ArchitectureDef, type LoadContext } from '@mlxcel/tensor';
import { checkAllTextTensorsUsed, checkLayerCount, checkLayerTypesComplete } from '../common/checkpoint-checks.js';
import type { GemmaLoadOptions } from '../common/attention.js';
import { parseGemma4Config } from './config.js';
import { Gemma4Model } from './model.js';
import { gemma4RandomWeights } from './random.js';
import { loadGemma4Weights } from './weights.js';

export function loadGemma4(ctx: LoadContext, opts: GemmaLoadOptions = {}): Gemma4Model {
  checkLayerCount(ctx.weights, ctx.config, 'gemma4');  // before parsing: nothing per-layer is allocated yet
  if (ctx.dir !== undefined) checkLayerTypesComplete(ctx.config, 'gemma4');  // a checkpoint folder, not random test weights
  const cfg = parseGemma4Config(ctx.config);
  const tracked = new TrackedWeights(ctx.weights);
  const model = new Gemma4Model(ctx.config, cfg, loadGemma4Weights(tracked, ctx.config, cfg, opts));
  checkAllTextTensorsUsed(tracked, 'gemma4', cfg);
  return model;
}

export const gemma4: ArchitectureDef = {
  modelTypes: ['gemma4', 'gemma4_text'],
  load: (ctx) => loadGemma4(ctx),
  randomWeights: (config, opts) => gemma4RandomWeights(config, opts),
};
