/** The Gemma 3n architecture: `gemma3n` (multimodal checkpoints, text tower) and `gemma3n_text`. */
import type { ArchitectureDef, LoadContext } from '@mlxcel/tensor';
import { parseGemma3nConfig } from './config.js';
import type { GemmaLoadOptions } from '../common/attention.js';
import { Gemma3nModel } from './model.js';
import { gemma3nRandomWeights } from './random.js';
import { loadGemma3nWeights } from './weights.js';

export function loadGemma3n(ctx: LoadContext, opts: GemmaLoadOptions = {}): Gemma3nModel {
  const cfg = parseGemma3nConfig(ctx.config);
  return new Gemma3nModel(ctx.config, cfg, loadGemma3nWeights(ctx.weights, ctx.config, cfg, opts));
}

export const gemma3n: ArchitectureDef = {
  modelTypes: ['gemma3n', 'gemma3n_text'],
  load: (ctx) => loadGemma3n(ctx),
  randomWeights: (config, opts) => gemma3nRandomWeights(config, opts),
};
