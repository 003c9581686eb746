import type { ArchitectureDef } from '@mlxcel/tensor';
import type { RandomWeightOptions } from '@mlxcel/models-core';
import { Phi3SmallModel } from './model.js';
import { randomPhi3SmallWeights } from './random.js';

export { parsePhi3SmallConfig, isDenseLayer, type Phi3SmallConfig } from './config.js';
export { loadPhi3SmallWeights, type Phi3SmallWeights, type Phi3SmallLayer } from './weights.js';
export { blockSparseVisible, blockSparseMask, type BlockSparseSpec } from './blocksparse.js';
export { dummyTokenIds } from './dummy.js';
export { Phi3SmallModel } from './model.js';
export { randomPhi3SmallWeights } from './random.js';

export const phi3smallArchitecture: ArchitectureDef = {
  modelTypes: ['phi3small'],
  load: (ctx) => new Phi3SmallModel(ctx.config, ctx.weights),
  randomWeights: (config, opts?: RandomWeightOptions) => randomPhi3SmallWeights(config, opts),
};
