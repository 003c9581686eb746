import type { ArchitectureDef } from '@mlxcel/tensor';
import type { RandomWeightOptions } from '@mlxcel/models-core';
import { Phi3Model } from './model.js';
import { randomPhi3Weights } from './random.js';

export { parsePhi3Config, type Phi3Config, type Phi3ConfigOptions } from './config.js';
export { loadPhi3Weights, type Phi3Weights, type Phi3Layer } from './weights.js';
export { Phi3Model } from './model.js';
export { randomPhi3Weights } from './random.js';

export const phi3Architecture: ArchitectureDef = {
  modelTypes: ['phi3'],
  load: (ctx) => new Phi3Model(ctx.config, ctx.weights),
  randomWeights: (config, opts?: RandomWeightOptions) => randomPhi3Weights(config, opts),
};
