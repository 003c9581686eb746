import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { get_encoding } from 'tiktoken';
import { loadTokenizer } from '../src/tokenizer/load.js';
import { parseTiktokenRanks, bytePairEncode } from '../src/tokenizer/bpe-ranks.js';
import { TiktokenTokenizer } from '../src/tokenizer/tiktoken.js';
import {
  createPhi3SmallTokenizer,
  phi3SmallDummyTokenIds,
  phi3SmallSpecialTokens,
} from '../src/tokenizer/phi3small.js';
import { MlxcelError } from '../src/errors.js';
import { CORPUS, PHI3SMALL_DIR } from './helpers/paths.js';
import { makeRng, randomText } from './helpers/random.js';

// fixtures/tokenizers/phi3small/cl100k_base.tiktoken is byte-identical to OpenAI's file
// (sha256 223921b7…, the hash tiktoken checks). Reference: the `tiktoken` package, whose
// Rust core (compiled to WASM) is tiktoken itself, with Phi-3-small's specials added.
const tok = loadTokenizer(PHI3SMALL_DIR) as TiktokenTokenizer;
const specials = phi3SmallSpecialTokens();
const reference = get_encoding('cl100k_base', specials);
afterAll(() => reference.free());

const ref = (text: string): number[] => Array.from(reference.encode(text, 'all'));

describe('Phi-3-small tiktoken tokenizer', () => {
  it('is picked for a folder with cl100k_base.tiktoken and reads generation_config stop ids', () => {
    expect(tok.kind).toBe('tiktoken');
    expect(tok.vocabSize).toBe(100352);
    expect(tok.bosId).toBe(100257);
    expect(tok.bosToken).toBe('<|endoftext|>');
    expect(tok.eosToken).toBe('<|endoftext|>');
    expect(tok.eosIds).toEqual([100257, 100266]);
  });

  it('has the 96-entry special table and the 91 dummy ids', () => {
    expect(Object.keys(specials)).toHaveLength(96);
    const ids = Object.values(specials).sort((a, b) => a - b);
    expect(ids[0]).toBe(100256);
    expect(ids[95]).toBe(100351);
    expect(new Set(ids).size).toBe(96);
    const dummy = phi3SmallDummyTokenIds();
    expect(dummy).toHaveLength(91);
    expect(dummy.slice(0, 6)).toEqual([100256, 100258, 100259, 100260, 100264, 100265]);
    expect(dummy).toContain(100276);
    for (const allowed of [100257, 100261, 100262, 100263, 100266]) expect(dummy).not.toContain(allowed);
    expect(specials['<|dummy_id_3|>']).toBe(100267);
    expect(specials['<|dummy_id_11|>']).toBe(100275);
    expect(specials['<|dummy_id_12|>']).toBe(100277);
    expect(specials['<|dummy_id_86|>']).toBe(100351);
  });

  it('produces known cl100k ids', () => {
    expect(tok.encode('hello world')).toEqual([15339, 1917]);
    expect(tok.encode('Hello world')).toEqual([9906, 1917]);
    expect(tok.encode('<|endoftext|><|user|>\nHi<|end|>\n<|assistant|>\n')).toEqual([
      100257, 100262, 198, 13347, 100266, 198, 100263, 198,
    ]);
    expect(tok.encode('')).toEqual([]);
  });

  it('matches tiktoken on the corpus', () => {
    for (const text of CORPUS) expect(tok.encode(text), JSON.stringify(text)).toEqual(ref(text));
  });

  it('matches tiktoken on U+FEFF and U+0085 (where js-tiktoken is wrong) and on contraction edge cases', () => {
    // Each of the first four splits differently under JS \s (which treats U+FEFF as space
    // and U+0085 as not), so they pin the \p{White_Space} rewrite of the pattern.
    for (const text of [' \ufeffa', ' \ufeff!', ' \u0085a', ' \u0085!', 'a\ufeffb', 'x\u0085 y', "it'ſ", "'ſa", "X'ſt 'S"]) {
      expect(tok.encode(text), JSON.stringify(text)).toEqual(ref(text));
    }
  });

  it('matches tiktoken on 3000 random strings (with special tokens mixed in)', () => {
    const rng = makeRng(1234);
    const extra = ['<|endoftext|>', '<|user|>', '<|end|>', '<|dummy_id_40|>', '<|fim_prefix|>', '<|endofprompt|>'];
    for (let i = 0; i < 3000; i++) {
      const text = randomText(rng, 32, extra);
      expect(tok.encode(text), JSON.stringify(text)).toEqual(ref(text));
    }
  });

  it('matches tiktoken on long single pieces (heap-based merging)', () => {
    const rng = makeRng(99);
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    let word = '';
    for (let i = 0; i < 5000; i++) word += letters[Math.floor(rng() * letters.length)];
    for (const text of [word, ' '.repeat(3000), '日本語'.repeat(700), '1'.repeat(999), '!@#$%^&*'.repeat(200)]) {
      expect(tok.encode(text)).toEqual(ref(text));
    }
  });

  it('decodes like Phi3SmallTokenizer', () => {
    for (const text of CORPUS) expect(tok.decode(tok.encode(text)), JSON.stringify(text)).toBe(text);
    const ids = tok.encode('<|endoftext|><|user|>\nHi<|end|>');
    expect(tok.decode(ids)).toBe('<|endoftext|><|user|>\nHi<|end|>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('\nHi');
    expect(tok.decode([])).toBe('');
    // a partial UTF-8 sequence becomes U+FFFD (errors="replace")
    const bytes = tok.encode('🦙');
    expect(bytes.length).toBeGreaterThan(1);
    expect(tok.decode(bytes.slice(0, -1))).toMatch(/\uFFFD$/);
  });

  it('maps ids to token text and back', () => {
    expect(tok.idToToken(15339)).toBe('hello');
    expect(tok.tokenToId('hello')).toBe(15339);
    expect(tok.idToToken(100266)).toBe('<|end|>');
    expect(tok.tokenToId('<|end|>')).toBe(100266);
    // a token holding part of a character is shown as byte escapes and maps back
    const partial = tok.encode('🦙')[0]!;
    const text = tok.idToToken(partial)!;
    expect(text).toMatch(/^(<0x[0-9A-F]{2}>)+$/);
    expect(tok.tokenToId(text)).toBe(partial);
    expect(tok.idToToken(200000)).toBeUndefined();
  });
});

describe('tiktoken ranks file and BPE', () => {
  it('parses the standard format and rejects malformed lines with the line number', () => {
    const r = parseTiktokenRanks('YQ== 0\nYg== 1\n\nYWI= 2\n');
    expect(r.encoder.get('ab')).toBe(2);
    expect(r.decoder[1]).toBe('b');
    expect(() => parseTiktokenRanks('YQ== 0\nnot a line\n', 'x.tiktoken')).toThrow(/x\.tiktoken line 2/);
    expect(() => parseTiktokenRanks('YQ== 0\nYQ== 1\n')).toThrow(MlxcelError);
    expect(() => parseTiktokenRanks('\n\n')).toThrow(/no tokens/);
  });

  it('merges the lowest rank first, leftmost on ties', () => {
    // vocabulary: a b c, ab (rank 3), bc (rank 4), abc (rank 5)
    const ranks = new Map([['a', 0], ['b', 1], ['c', 2], ['ab', 3], ['bc', 4], ['abc', 5], ['aa', 6]]);
    const enc = (s: string): number[] => {
      const out: number[] = [];
      bytePairEncode(s, ranks, out);
      return out;
    };
    expect(enc('abc')).toEqual([5]); // whole piece is a token
    expect(enc('abcb')).toEqual([5, 1]); // ab (3) before bc (4), then ab+c → abc
    expect(enc('bcab')).toEqual([4, 3]);
    expect(enc('aaa')).toEqual([6, 0]); // tie: leftmost pair merges first
    expect(() => enc('az')).toThrow(/no token for bytes \[7a\]/);
  });

  it('builds a tokenizer from an arbitrary ranks file and pattern', () => {
    const t = new TiktokenTokenizer({
      ranks: parseTiktokenRanks('YQ== 0\nYg== 1\nIA== 2\nYWI= 3\n'),
      pattern: ' ?[ab]+| ',
      specialTokens: { '<e>': 10 },
      bosToken: '<e>',
      eosToken: '<e>',
      addBosToken: true,
    });
    expect(t.encode('ab ab<e>')).toEqual([10, 3, 2, 3, 10]);
    expect(t.encode('ab', { addSpecialTokens: false })).toEqual([3]);
    expect(t.decode([3, 2, 0, 10], { skipSpecialTokens: true })).toBe('ab a');
    expect(t.vocabSize).toBe(11);
  });
});

it('createPhi3SmallTokenizer works from the ranks text alone', () => {
  const text = readFileSync(join(PHI3SMALL_DIR, 'cl100k_base.tiktoken'), 'utf8');
  const t = createPhi3SmallTokenizer(text);
  expect(t.encode('hello world<|end|>')).toEqual([15339, 1917, 100266]);
  expect(t.eosIds).toEqual([100257]);
});
