/** The Gemma 4 architecture: `gemma4` (multimodal checkpoints, text tower) and `gemma4_text`. */
import type { ArchitectureDef, LoadContext } from '@mlxcel/tensor';
import type { GemmaLoadOptions } from '../common/attention.js';
import { parseGemma4Config } from './config.js';
import { Gemma4Model } from './model.js';
import { gemma4RandomWeights } from './random.js';
import { loadGemma4Weights } from './weights.js';

export function loadGemma4(ctx: LoadContext, opts: GemmaLoadOptions = {}): Gemma4Model {
  const cfg = parseGemma4Config(ctx.config);
  return new Gemma4Model(ctx.config, cfg, loadGemma4Weights(ctx.weights, ctx.config, cfg, opts));
}

export const gemma4: ArchitectureDef = {
  modelTypes: ['gemma4', 'gemma4_text'],
  load: (ctx) => loadGemma4(ctx),
  randomWeights: (config, opts) => gemma4RandomWeights(config, opts),
};
