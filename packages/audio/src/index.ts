export { decodeWav, encodeWav, SUPPORTED_WAV_FORMATS, type DecodedWav } from './wav.js';
export { resample, type ResampleOptions } from './resample.js';
export { loadAudio, type LoadedAudio } from './load.js';
export { melConfig, type MelConfig } from './mel/config.js';
export { extractLogMel, frameCount, type LogMelFeatures, type ExtractOptions } from './mel/extract.js';
export { melFilterbank, periodicHann } from './mel/filterbank.js';
export { admits, gemma4Window, inclusiveWindow, type LocalWindow } from './conformer/window.js';
export { parseGemma4AudioConfig, type Gemma4AudioConfig } from './gemma4/config.js';
export type { EncoderOutput } from './encoder-output.js';
export { Gemma4AudioEncoder, Gemma4AudioEmbedder } from './gemma4/encoder.js';
export { parseGemma3nAudioConfig, type Gemma3nAudioConfig } from './gemma3n/config.js';
export { Gemma3nAudioEncoder, Gemma3nAudioEmbedder } from './gemma3n/encoder.js';
export {
  audioFamily, audioModelFrom, loadAudioModel,
  type AudioModel, type AudioModelSource, type Gemma3nAudioModel, type Gemma4AudioModel,
} from './model.js';
export { audioTokenCount, gemma4AudioTokenCount } from './tokens.js';
export { audioSoftTokens, encodeAudio, type AudioSoftTokens, type AudioInputOptions, type EncodedAudio } from './soft-tokens.js';
export {
  audioEmbeddingOverrides, audioExpansionText, audioPromptIds, audioPromptTokens, expandAudioPlaceholderIds,
  expandAudioPlaceholders, placeholderRows, renderAudioChatPrompt, withAudioInLastUserTurn,
  type AudioPromptIds, type AudioPromptTokens, type ChatMessage, type RenderOptions,
} from './prompt.js';
export { conv2d, type Conv2dSpec } from './conformer/conv.js';
export { MIN_SAMPLE_RATE, MAX_SAMPLE_RATE, checkSampleRate } from './rates.js';
