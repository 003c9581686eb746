/**
 * @mlxcel/models-gemma: Gemma 3n and Gemma 4 text models (dense, MoE, E-series with per-layer
 * inputs) for the mlxcel engine. `architectures` is what the engine's registry consumes.
 */
import type { ArchitectureDef } from '@mlxcel/tensor';
import { gemma3n } from './gemma3n/index.js';
import { gemma4 } from './gemma4/index.js';

export const architectures: ArchitectureDef[] = [gemma3n, gemma4];

export { gemma3n, loadGemma3n } from './gemma3n/index.js';
export { Gemma3nModel } from './gemma3n/model.js';
export { gemma4, loadGemma4 } from './gemma4/index.js';
export { Gemma4Model } from './gemma4/model.js';
export { parseGemma4Config, type Gemma4Config, type Gemma4MoeConfig } from './gemma4/config.js';
export { Gemma4MoeBlock } from './gemma4/moe-block.js';
export { parseGemma3nConfig, type Gemma3nConfig } from './gemma3n/config.js';
export { GemmaState } from './common/state.js';
export type { GemmaForwardInput, GemmaLayout } from './common/batch.js';
export { alignPerLayerInputs } from './common/ple.js';
export { overridesForChunk } from '@mlxcel/models-core';
export { ModelConfigError } from '@mlxcel/models-core';
export type { LayerType } from './common/layer-types.js';
export type { SharedQueryOffset, GemmaLoadOptions } from './common/attention.js';
export { RandomWeights, type RandomWeightOptions } from '@mlxcel/models-core';
export { normalQuantile } from './common/normal-quantile.js';
