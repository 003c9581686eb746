export type { Tokenizer, EncodeOptions, DecodeOptions } from './types.js';
export { HfTokenizer, type HfTokenizerOptions } from './hf.js';
export { TiktokenTokenizer, CL100K_PATTERN, type TiktokenTokenizerOptions } from './tiktoken.js';
export { parseTiktokenRanks, bytePairEncode, type BpeRanks } from './bpe-ranks.js';
export {
  createPhi3SmallTokenizer,
  phi3SmallSpecialTokens,
  phi3SmallDummyTokenIds,
  PHI3_SMALL_EOD_ID,
  PHI3_SMALL_VOCAB_SIZE,
  type Phi3SmallTokenizerOptions,
} from './phi3small.js';
export { loadTokenizer } from './load.js';
export { readConfigEosIds, tokenText } from './config.js';
export { validateTokenizerJson, MAX_TOKEN_ID, type TokenizerJsonSummary } from './validate.js';
export { checkPatternBudget, starHeight, MAX_PATTERN_LENGTH } from './regex-budget.js';
