/**
 * @mlxcel/models-gemma: Gemma 3n and Gemma 4 text models (dense, MoE, E-series with per-layer
 * inputs) for the mlxcel engine. `architectures` is what the engine's registry consumes.
 */
import type { ArchitectureDef } from '@mlxcel/tensor';
import { gemma3n } from './gemma3n/index.js';

export const architectures: ArchitectureDef[] = [gemma3n];

export { gemma3n, loadGemma3n } from './gemma3n/index.js';
export { Gemma3nModel, type GemmaLoadOptions } from './gemma3n/model.js';
export { parseGemma3nConfig, type Gemma3nConfig } from './gemma3n/config.js';
export { GemmaState, type CacheLayout } from './common/state.js';
export type { GemmaForwardInput } from './common/batch.js';
export { alignPerLayerInputs } from './common/ple.js';
export { GemmaConfigError } from './common/config-read.js';
export type { LayerType } from './common/layer-types.js';
export type { SharedQueryOffset } from './common/attention.js';
export { RandomWeights, type RandomWeightOptions } from './common/random.js';
export { normalQuantile } from './common/mlp.js';
