import type { ArchitectureDef } from '@mlxcel/tensor';
import { phiArchitecture } from '../common/architecture.js';
import { Phi3Model } from './model.js';
import { randomPhi3Weights } from './random.js';

export { parsePhi3Config, type Phi3Config, type Phi3ConfigOptions } from './config.js';
export { loadPhi3Weights, type Phi3Weights, type Phi3Layer } from './weights.js';
export { Phi3Model } from './model.js';
export { randomPhi3Weights } from './random.js';

export const phi3Architecture: ArchitectureDef = phiArchitecture('phi3', (config, weights) => new Phi3Model(config, weights), randomPhi3Weights);
