export * from './text.js';
export { registerArchitecture, supportedModelTypes, architectureFor } from './registry.js';
export { loadModel, loadModelFromDir, readJson, type LoadModelOptions, type LoadedModel } from './load.js';
export { generate, Generation, prefill } from './generate.js';
export type { GenerateOptions, GeneratedToken, GenerationStats, PromptInput, PromptSpan, StepResult } from './types.js';
export {
  openSession, PromptPrefill, promptIds, checkContext, prefillChunkFor, decodeOne, DEFAULT_PREFILL_CHUNK, chunkEnd, spansInRange,
  type Session, type PromptPrefillOptions,
} from './session.js';
export { StopMatcher } from './stop.js';
export { defaultKvStorage, KV_STORAGES, type KvStorageDefault } from './kv-default.js';
export { TokenEmitter } from './token-emitter.js';
export { BatchScheduler, BatchedGeneration, defaultKvBudgetBytes, type SchedulerOptions } from './batch.js';
export { PrefixCache, prefixIneligible, preallocateKv, releaseKv, kvReadBytesPerStep, DEFAULT_PREFIX_BLOCK, DEFAULT_PREFIX_CHUNK, type PrefixUse } from './prefix.js';
export { traceModel, writeTrace, compareTraces, perplexity, type TraceOptions, type TraceResult, type TraceComparison, type TensorComparison } from './trace.js';
export { randomModel, randomCheckpoint, shrinkLayers, ensureDemoModel, defaultCacheDir, type RandomModelOptions } from './random.js';
export { audioChatPrompt, audioClip, audioModelOf, audioPrompt, traceAudio, type AudioPrompt } from './audio.js';
export * from './constraint/index.js';
export * from './tools/index.js';
/** Re-based override rows of one prefill chunk (for callers that slice a prompt themselves, e.g. chat). */
export { overridesForChunk } from '@mlxcel/models-core';
export {
  decodeImage, hasImageParts, imagePrompt, imageSourceFromUrl, imageSourceOfPart, readImageFile, supportsImages, traceImages, visionDecodeEmbedding, visionInfo, visionModelOf,
  type ImagePrompt, type ImageTrace, type VisionInfo,
} from './vision.js';
