import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MlxcelError } from '../src/errors.js';
import { loadTokenizer } from '../src/tokenizer/load.js';
import { makePhi3Dir } from './helpers/phi3.js';
import { PHI3SMALL_DIR } from './helpers/paths.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'mlxcel-tok-'));
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(MlxcelError);
    return (err as MlxcelError).code;
  }
  return undefined;
}

describe('loadTokenizer errors', () => {
  it('names a missing folder', () => {
    const dir = join(tmpdir(), 'mlxcel-does-not-exist-' + process.pid);
    expect(codeOf(() => loadTokenizer(dir))).toBe('TOKENIZER_DIR_NOT_FOUND');
    expect(() => loadTokenizer(dir)).toThrow(dir);
  });

  it('says which files are missing and what was found', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'config.json'), '{}');
    expect(codeOf(() => loadTokenizer(dir))).toBe('TOKENIZER_FILES_MISSING');
    expect(() => loadTokenizer(dir)).toThrow(/expected tokenizer\.json, or a \*\.tiktoken ranks file.*present: none/);
    writeFileSync(join(dir, 'tokenizer.model'), 'x');
    expect(() => loadTokenizer(dir)).toThrow(/tokenizer\.model is a SentencePiece protobuf.*present: tokenizer\.model/);
  });

  it('rejects a tiktoken file of an unknown model', () => {
    const dir = tempDir();
    copyFileSync(join(PHI3SMALL_DIR, 'cl100k_base.tiktoken'), join(dir, 'o200k_base.tiktoken'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: 'other' }));
    expect(codeOf(() => loadTokenizer(dir))).toBe('TOKENIZER_UNSUPPORTED');
    // ...but accepts it when config.json says phi3small
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: 'phi3small', eos_token_id: 100257 }));
    const tok = loadTokenizer(dir);
    expect(tok.encode('hello world')).toEqual([15339, 1917]);
    expect(tok.eosIds).toEqual([100257]);
  });

  it('names broken files', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'tokenizer.json'), '{not json');
    expect(codeOf(() => loadTokenizer(dir))).toBe('JSON_INVALID');
    expect(() => loadTokenizer(dir)).toThrow(join(dir, 'tokenizer.json'));
    writeFileSync(join(dir, 'tokenizer.json'), '{"version":"1.0"}');
    expect(codeOf(() => loadTokenizer(dir))).toBe('TOKENIZER_FILE_INVALID');
    const dir2 = tempDir();
    writeFileSync(join(dir2, 'cl100k_base.tiktoken'), 'IQ== 0\ngarbage\n');
    expect(() => loadTokenizer(dir2)).toThrow(/cl100k_base\.tiktoken line 2/);
  });
});

describe('Phi-3 style tokenizer.json with tokenizer_config.json', () => {
  const tok = loadTokenizer(makePhi3Dir());

  it('honours add_bos_token=false and merges generation_config stop ids', () => {
    expect(tok.encode('Hello world')).toEqual([15043, 3186]);
    expect(tok.bosId).toBe(1);
    expect(tok.eosToken).toBe('<|endoftext|>');
    expect(tok.eosIds).toEqual([32007, 32001, 32000]);
    expect(tok.vocabSize).toBe(32011);
    expect(tok.tokenizerConfig.tokenizer_class).toBe('LlamaTokenizer');
  });

  it('adds tokens that only tokenizer_config.json added_tokens_decoder lists', () => {
    const dir = makePhi3Dir();
    const configPath = join(dir, 'tokenizer_config.json');
    const config = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
    config.added_tokens_decoder = {
      '32007': { content: '<|end|>', special: true, rstrip: true },
      '32011': { content: '<|extra|>', special: true, lstrip: false, rstrip: false, normalized: false, single_word: false },
    };
    writeFileSync(configPath, JSON.stringify(config));
    const t = loadTokenizer(dir);
    expect(t.tokenToId('<|extra|>')).toBe(32011);
    expect(t.vocabSize).toBe(32012);
    expect(t.specialIds.has(32011)).toBe(true);
    expect(t.encode('a<|extra|>', { addSpecialTokens: false })).toEqual([...t.encode('a', { addSpecialTokens: false }), 32011]);
    expect(t.decode([32011], { skipSpecialTokens: true })).toBe('');
  });

  it('matches added tokens and honours rstrip', () => {
    const hi = tok.encode('Hi', { addSpecialTokens: false });
    // rstrip on <|user|> swallows the newline after it, as in the real Phi-3 tokenizer
    expect(tok.encode('<|user|>\nHi<|end|>', { addSpecialTokens: false })).toEqual([32010, ...hi, 32007]);
    expect(tok.decode([32010, ...hi, 32007], { skipSpecialTokens: true })).toBe('Hi');
  });
});
