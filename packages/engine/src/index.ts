export * from './text.js';
export { registerArchitecture, supportedModelTypes, architectureFor } from './registry.js';
export { loadModel, loadModelFromDir, readJson, type LoadModelOptions, type LoadedModel } from './load.js';
export {
  generate, Generation, prefill, prefillChunk, promptIds, DEFAULT_PREFILL_CHUNK,
  type GenerateOptions, type GeneratedToken, type GenerationStats, type PromptInput,
} from './generate.js';
export { StopMatcher } from './stop.js';
export { TokenStepper, type StepResult } from './stepper.js';
export { BatchScheduler, BatchedGeneration, type SchedulerOptions } from './batch.js';
export { traceModel, writeTrace, compareTraces, perplexity, type TraceOptions, type TraceResult, type TraceComparison, type TensorComparison } from './trace.js';
export { randomModel, randomCheckpoint, shrinkLayers, ensureDemoModel, defaultCacheDir, type RandomModelOptions } from './random.js';
export { audioModelOf, audioPrompt, traceAudio, type AudioPrompt } from './audio.js';
