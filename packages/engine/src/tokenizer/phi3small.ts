import { parseTiktokenRanks } from './bpe-ranks.js';
import { CL100K_PATTERN, TiktokenTokenizer } from './tiktoken.js';

/** `<|endoftext|>`: Phi-3-small's BOS, EOS and pad token. */
export const PHI3_SMALL_EOD_ID = 100257;
/** Embedding rows of Phi-3-small (cl100k_base padded with dummy tokens). */
export const PHI3_SMALL_VOCAB_SIZE = 100352;

/**
 * Phi-3-small's special-token table. It is hard-coded in the checkpoint's
 * `tokenization_phi3_small.py` (not stored in any JSON file), so it is embedded here:
 * cl100k_base's specials, the chat tokens, and `<|dummy_id_N|>` fillers that pad the
 * vocabulary to 100352 ids (see docs/architecture/phi3small.md §6–7).
 */
export function phi3SmallSpecialTokens(): Record<string, number> {
  const table: Record<string, number> = {
    '<|dummy_id_2|>': 100256, // cl100k has no token 100256
    '<|endoftext|>': 100257,
    '<|fim_prefix|>': 100258,
    '<|fim_middle|>': 100259,
    '<|fim_suffix|>': 100260,
    '<|system|>': 100261,
    '<|user|>': 100262,
    '<|assistant|>': 100263,
    '<|dummy_id_0|>': 100264,
    '<|dummy_id_1|>': 100265,
    '<|end|>': 100266,
  };
  for (let n = 3; n <= 11; n++) table[`<|dummy_id_${n}|>`] = 100264 + n; // 100267 … 100275
  table['<|endofprompt|>'] = 100276;
  for (let n = 12; n <= 86; n++) table[`<|dummy_id_${n}|>`] = 100265 + n; // 100277 … 100351
  return table;
}

/**
 * The 91 ids Phi-3-small must never generate: every `<|dummy_id_N|>` plus
 * `<|fim_prefix|>`, `<|fim_middle|>`, `<|fim_suffix|>` and `<|endofprompt|>` (the
 * tokenizer's `dummy_token_indices`). Sorted ascending. Feed them to the sampler's
 * `suppressedIds`.
 */
export function phi3SmallDummyTokenIds(): number[] {
  const table = phi3SmallSpecialTokens();
  const extra = new Set(['<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>', '<|endofprompt|>']);
  return Object.entries(table)
    .filter(([text]) => text.includes('dummy_id') || extra.has(text))
    .map(([, id]) => id)
    .sort((a, b) => a - b);
}

export interface Phi3SmallTokenizerOptions {
  tokenizerConfig?: Record<string, unknown>;
  configEosIds?: readonly number[];
  /** Name for error messages. */
  source?: string;
}

/**
 * Phi-3-small's tokenizer from the text of its `cl100k_base.tiktoken` ranks file:
 * cl100k pre-tokenization + byte-level BPE, specials from {@link phi3SmallSpecialTokens}.
 * Matches `Phi3SmallTokenizer`: special-token text in the input always becomes the special
 * id, `encode` adds no BOS (the chat template writes `{{ bos_token }}`), BOS = EOS =
 * `<|endoftext|>`, and `skipSpecialTokens` drops every id ≥ 100257.
 */
export function createPhi3SmallTokenizer(ranksText: string, options: Phi3SmallTokenizerOptions = {}): TiktokenTokenizer {
  const ranks = parseTiktokenRanks(ranksText, options.source);
  const specialTokens = phi3SmallSpecialTokens();
  const skipped = new Set(Object.values(specialTokens).filter((id) => id >= PHI3_SMALL_EOD_ID));
  return new TiktokenTokenizer({
    ranks,
    pattern: CL100K_PATTERN,
    specialTokens,
    bosToken: '<|endoftext|>',
    eosToken: '<|endoftext|>',
    addBosToken: false,
    skippedIds: skipped,
    vocabSize: PHI3_SMALL_VOCAB_SIZE,
    tokenizerConfig: options.tokenizerConfig,
    configEosIds: options.configEosIds,
  });
}
