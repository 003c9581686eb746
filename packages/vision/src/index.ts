export { decodeImage, rawToRgb, DEFAULT_MAX_PIXELS, type RgbImage, type RawPixels, type ImageSource, type DecodeOptions } from './image/decode.js';
export { resizeRgb, resampleCoefficients, resampleFromCode, type ResampleFilter, type ResampleCoefficients } from './image/resize.js';
export {
  GEMMA4_BUDGETS, gemma3nProcessorSettings, gemma4ProcessorSettings, mergeProcessorFiles,
  type Gemma3nProcessorSettings, type Gemma4ProcessorSettings, type ProcessorSettings,
} from './processor/settings.js';
export { processGemma3n, type Gemma3nPixels } from './processor/gemma3n.js';
export { processGemma4, gemma4TargetSize, type Gemma4Pixels } from './processor/gemma4.js';
export { parseGemma4VisionConfig, type Gemma4VisionConfig } from './gemma4/config.js';
export { Gemma4VisionTower, Gemma4VisionEmbedder, type Gemma4TowerOutput } from './gemma4/tower.js';
export { rope2dTables } from './gemma4/rope2d.js';
export { parseGemma3nVisionConfig, type Gemma3nVisionConfig } from './gemma3n/config.js';
export { Gemma3nVisionEmbedder } from './gemma3n/embedder.js';
export { MobileNetV5Encoder, MSFA_RESOLUTION, type MobileNetOutput } from './mobilenet/tower.js';
export { samePadding, type FeatureMap } from './mobilenet/conv.js';
export { avgPool, resizeBilinear, upsampleNearest } from './mobilenet/blocks.js';
export {
  hasVision, loadVisionModel, visionFamily, visionModelFrom,
  type VisionModel, type VisionModelSource, type Gemma3nVisionModel, type Gemma4VisionModel,
} from './model.js';
export { towerStats, type TowerStats } from './stats.js';
export { visionPrefixes, type VisionPrefixes } from './weights.js';
export {
  encodeProcessed, imageSoftTokens, processImage,
  type EncodedImage, type ImageInputOptions, type ImageSoftTokens, type ProcessedImage,
} from './encode.js';
export {
  expandImagePlaceholders, hardVisionRows, imageEmbeddingOverrides, imageExpansionText,
  imagePromptIds, imagePromptTokens, imageSpans, type ImagePromptTokens, type ImageSpan,
} from './prompt.js';
