import type { ArchitectureDef } from '@mlxcel/tensor';
import { phiArchitecture } from '../common/architecture.js';
import { Phi3SmallModel } from './model.js';
import { randomPhi3SmallWeights } from './random.js';

export { parsePhi3SmallConfig, isDenseLayer, type Phi3SmallConfig } from './config.js';
export { loadPhi3SmallWeights, type Phi3SmallWeights, type Phi3SmallLayer } from './weights.js';
export { blockSparseVisible, blockSparseMask, type BlockSparseSpec } from './blocksparse.js';
export { dummyTokenIds } from './dummy.js';
export { Phi3SmallModel } from './model.js';
export { randomPhi3SmallWeights } from './random.js';

export const phi3smallArchitecture: ArchitectureDef = phiArchitecture('phi3small', (config, weights) => new Phi3SmallModel(config, weights), randomPhi3SmallWeights);
