import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MlxcelError } from '../errors.js';
import { readConfigEosIds, readJsonFile, readOptionalJsonObject } from './config.js';
import { HfTokenizer } from './hf.js';
import { createPhi3SmallTokenizer } from './phi3small.js';
import type { Tokenizer } from './types.js';

/**
 * Load the tokenizer of a model folder, choosing the implementation by the files present:
 * 1. `tokenizer.json` → {@link HfTokenizer} (Gemma, Phi-3/3.5, Phi-4-mini, …);
 * 2. a `*.tiktoken` ranks file (Phi-3-small's `cl100k_base.tiktoken`) → the Phi-3-small
 *    tiktoken tokenizer (only Phi-3-small's cl100k file is known; other tiktoken models
 *    are rejected with `TOKENIZER_UNSUPPORTED`).
 * `tokenizer_config.json` (special tokens, `add_bos_token`, chat template) and the stop ids
 * of `generation_config.json` / `config.json` are read when present.
 *
 * Errors (`MlxcelError.code`): `TOKENIZER_DIR_NOT_FOUND`, `TOKENIZER_FILES_MISSING` (names
 * what is missing and what was found), `TOKENIZER_UNSUPPORTED`, `TOKENIZER_FILE_INVALID`.
 */
export function loadTokenizer(dir: string): Tokenizer {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new MlxcelError('TOKENIZER_DIR_NOT_FOUND', `tokenizer folder ${dir} does not exist or is not a folder`);
  }
  const files = readdirSync(dir);
  const tokenizerConfig = readOptionalJsonObject(dir, 'tokenizer_config.json') ?? {};
  const configEosIds = readConfigEosIds(dir);

  if (files.includes('tokenizer.json')) {
    const path = join(dir, 'tokenizer.json');
    return new HfTokenizer(readJsonFile(path), { tokenizerConfig, configEosIds, source: path });
  }

  const tiktokenFiles = files.filter((f) => f.endsWith('.tiktoken')).sort();
  if (tiktokenFiles.length > 0) {
    const config = readOptionalJsonObject(dir, 'config.json');
    const isPhi3Small =
      config?.model_type === 'phi3small' ||
      tokenizerConfig.tokenizer_class === 'Phi3SmallTokenizer' ||
      tiktokenFiles.includes('cl100k_base.tiktoken');
    if (!isPhi3Small) {
      throw new MlxcelError(
        'TOKENIZER_UNSUPPORTED',
        `${dir} has the tiktoken file(s) ${tiktokenFiles.join(', ')} but is not Phi-3-small (no cl100k_base.tiktoken, ` +
          `config.json model_type is ${JSON.stringify(config?.model_type)}); only Phi-3-small's tiktoken vocabulary is supported`,
      );
    }
    const name = tiktokenFiles.includes('cl100k_base.tiktoken') ? 'cl100k_base.tiktoken' : tiktokenFiles[0]!;
    const path = join(dir, name);
    return createPhi3SmallTokenizer(readFileSync(path, 'utf8'), { tokenizerConfig, configEosIds, source: path });
  }

  const found = files.filter((f) => /^(tokenizer|vocab|merges|special_tokens|spiece)/i.test(f) || f.endsWith('.model'));
  const hint = files.includes('tokenizer.model')
    ? ' (tokenizer.model is a SentencePiece protobuf, which is not supported on its own: the repo must also ship tokenizer.json)'
    : '';
  throw new MlxcelError(
    'TOKENIZER_FILES_MISSING',
    `no tokenizer in ${dir}: expected tokenizer.json, or a *.tiktoken ranks file (cl100k_base.tiktoken for Phi-3-small)${hint}; ` +
      `tokenizer-like files present: ${found.length > 0 ? found.join(', ') : 'none'}`,
  );
}
