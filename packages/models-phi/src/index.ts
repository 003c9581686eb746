/**
 * @mlxcel/models-phi: Phi-3 / Phi-3.5-mini / Phi-4-mini (`phi3`), Phi-3.5-MoE (`phimoe`) and
 * Phi-3-small (`phi3small`), registered by model_type through `architectures`.
 */
import type { ArchitectureDef } from '@mlxcel/tensor';
import { phi3Architecture } from './phi3/index.js';
import { phi3smallArchitecture } from './phi3small/index.js';
import { phimoeArchitecture } from './phimoe/index.js';

export * from './phi3/index.js';
export * from './phi3small/index.js';
export * from './phimoe/index.js';
export { ModelConfigError, type ConfigErrorCode } from '@mlxcel/models-core';
export { convertPhiCheckpoint, stackPhiMoEExperts, type ConvertOptions, type Converted } from './convert.js';
export { PhiSequence } from './common/sequence.js';
export type { PhiLayout, PhiRun } from './common/batch.js';
export { withQuantization, configDType, type RandomWeightOptions, type FloatDType } from '@mlxcel/models-core';

export const architectures: ArchitectureDef[] = [phi3Architecture, phimoeArchitecture, phi3smallArchitecture];
