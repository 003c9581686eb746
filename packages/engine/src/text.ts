/**
 * The text side of @mlxcel/engine: tokenizers, chat templates, sampling, streaming
 * detokenization and Hugging Face hub downloads. Pure TypeScript, no native code.
 */
export { MlxcelError } from './errors.js';
export * from './tokenizer/index.js';
export * from './chat/index.js';
export * from './sampling/index.js';
export { StreamingDetokenizer, type StreamingDetokenizerOptions } from './detokenize.js';
export * from './hub/index.js';
