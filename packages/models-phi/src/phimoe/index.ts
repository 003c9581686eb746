import type { ArchitectureDef } from '@mlxcel/tensor';
import type { RandomWeightOptions } from '@mlxcel/models-core';
import { PhiMoEModel } from './model.js';
import { randomPhiMoEWeights } from './random.js';

export { parsePhiMoEConfig, type PhiMoEConfig, type PhiMoEConfigOptions } from './config.js';
export { loadPhiMoEWeights, type PhiMoEWeights, type PhiMoELayer } from './weights.js';
export { PhiMoEModel, type RoutingObserver } from './model.js';
export { randomPhiMoEWeights } from './random.js';

export const phimoeArchitecture: ArchitectureDef = {
  modelTypes: ['phimoe'],
  load: (ctx) => new PhiMoEModel(ctx.config, ctx.weights),
  randomWeights: (config, opts?: RandomWeightOptions) => randomPhiMoEWeights(config, opts),
};
