/**
 * @mlxcel/models-core: the skeleton every mlxcel model family builds on — one config reader and error,
 * one batch layout with every input check, one attention geometry and attention call, the LM head
 * (row selection, soft-cap), cache specs, random-weight checkpoints and THE seeded PRNG. Each
 * architecture then is a config file, a weight-name file and one forward file (docs/architecture/).
 */
export { ModelConfigError, type ConfigErrorCode } from './errors.js';
export { ConfigReader, isObject, type Json } from './config.js';
export {
  checkBatch, layoutRows, outputRows, gatherRows, overridesForChunk,
  type BatchContext, type CheckedInput, type SeqFeed, type SeqRows, type BatchLayout,
} from './batch.js';
export { attendBatch, type AttentionGeometry, type AttendRows, type MaskBuilder } from './attention.js';
export { buildLayerCaches, cacheSpecOf, type LayerCacheSpec } from './caches.js';
export { LmHead, type LmHeadOptions, type RowNorm } from './head.js';
export { DecoderModel, runLayers, layerOutputName, EMBEDDINGS_NAME, type HiddenStateTap, type ModelIdentity } from './model.js';
export {
  RandomWeights, configDType, withQuantization, initLinear, initFanIn, initNorm, initOnes, initBias,
  type RandomWeightOptions, type FloatDType, type Init,
} from './random.js';
export { Xoshiro128, seedFor } from './prng.js';
export { ScratchBuffers } from './scratch.js';
export { WeightLoader } from './weight-loader.js';
export { WeightStats, paramCount } from './weight-stats.js';
export { ClippableLinear, clamp, linearProjection, scalarOr, type Projection } from './projections.js';
export {
  towerFamily, towerPrefixes, towerSourceFromDir, readJsonIfPresent, type TowerSource, type TowerKind, type TowerPrefixes,
} from './tower-source.js';
export { channelsLastKernel, convKernelDims, convKernelTensor, loadConvKernel, type ConvLayout } from './conv-kernels.js';
export { asPrefixReusable, checkRestored, type PrefixReusableState } from './prefix.js';
