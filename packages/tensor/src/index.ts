export { MlxcelError } from './errors.js';
export { toTokenIds, type TokenIdsInput } from './token-ids.js';
export { assertRegularFile, readRegularFile, confinedPath } from './files.js';
export { type DType, dtypeBytes, isDType } from './dtype.js';
export { Tensor, numel } from './tensor.js';
export { Weight, QuantizedWeight, type QuantParams } from './weight.js';
export {
  WeightArena, weightArena, allocWeightBytes, placeWeight, weightPlacement, setWeightPlacement, weightLayout, setWeightLayout, hugePagesAvailable, type WeightPlacement, type WeightLayout,
} from './weight-memory.js';
export { SafetensorsFile, writeSafetensors, type TensorInfo } from './safetensors.js';
export { Checkpoint, MemoryWeights, RenamedWeights, type WeightStore } from './checkpoint.js';
export * as ops from './ops.js';
export { floats, freshBuffer, outputFloats, persistentFloats, withLayerArenas, layerArenaBytes, setArenaPoison, ARENA_KEEP_BYTES, ARENA_MIN_BYTES, LARGE_ARRAY_BYTES } from './buffers.js';
export {
  Linear, Embedding, RMSNorm, LayerNorm, loadWeight, loadVector, quantConfigOf, quantParamsFor,
  type QuantConfig, type LoadOptions, type FfnRole,
} from './nn.js';
export * as reference from './reference.js';
export { openExpected, maxAbsDiff, relMaxDiff, errorOf, type ExpectedTensors } from './testing.js';
export type { SequenceState, StateOptions, ForwardInput, ForwardOptions, LanguageModel, LoadContext, ArchitectureDef } from './model.js';
export {
  firstNonFinite, assertFinite, NonFiniteError, NO_PROBE, locateNonFinite, nonFiniteLogitsError, nonFiniteReport, isNonFiniteFailure,
  type FiniteProbe,
} from './finite.js';
export { TrackedWeights } from './tracked-weights.js';
export { scanWeights } from './weight-scan.js';
