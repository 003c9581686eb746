/** The ArchitectureDef of a Phi architecture: the layer-count check before anything per-layer is built, then its model. */
import type { RandomWeightOptions, RandomWeights } from '@mlxcel/models-core';
import type { ArchitectureDef, LanguageModel, WeightStore } from '@mlxcel/tensor';
import { checkLayerCount } from './layer-count.js';

export function phiArchitecture(
  modelType: string,
  model: (config: Record<string, unknown>, weights: WeightStore) => LanguageModel,
  randomWeights: (config: Record<string, unknown>, opts?: RandomWeightOptions) => RandomWeights,
): ArchitectureDef {
  return {
    modelTypes: [modelType],
    load: (ctx) => {
      checkLayerCount(ctx.weights, ctx.config, modelType); // before anything per-layer is built
      return model(ctx.config, ctx.weights);
    },
    randomWeights: (config, opts?: RandomWeightOptions) => randomWeights(config, opts),
  };
}
