import type { ArchitectureDef } from '@mlxcel/tensor';
import { phiArchitecture } from '../common/architecture.js';
import { PhiMoEModel } from './model.js';
import { randomPhiMoEWeights } from './random.js';

export { parsePhiMoEConfig, type PhiMoEConfig, type PhiMoEConfigOptions } from './config.js';
export { loadPhiMoEWeights, type PhiMoEWeights, type PhiMoELayer } from './weights.js';
export { PhiMoEModel, type RoutingObserver } from './model.js';
export { randomPhiMoEWeights } from './random.js';

export const phimoeArchitecture: ArchitectureDef = phiArchitecture('phimoe', (config, weights) => new PhiMoEModel(config, weights), randomPhiMoEWeights);
