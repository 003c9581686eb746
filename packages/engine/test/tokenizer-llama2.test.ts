import { describe, expect, it } from 'vitest';
import llamaJs from 'llama-tokenizer-js';
import { loadTokenizer } from '../src/tokenizer/load.js';
import { CORPUS, LLAMA2_DIR } from './helpers/paths.js';

// Real Llama-2 vocabulary (32000 ids, byte fallback) as tokenizer.json. The folder has no
// tokenizer_config.json, so BOS comes from the TemplateProcessing post-processor.
const tok = loadTokenizer(LLAMA2_DIR);

/**
 * Independent expectation from llama-tokenizer-js (its own SentencePiece BPE over the same
 * vocabulary). It knows no special tokens, so special strings are split out here the way
 * tokenizer.json does it: each text segment is encoded on its own (with its own ▁ prefix).
 */
function expectedIds(text: string): number[] {
  const out = [1];
  for (const part of text.split(/(<s>|<\/s>|<unk>)/)) {
    if (part === '') continue;
    if (part === '<s>') out.push(1);
    else if (part === '</s>') out.push(2);
    else if (part === '<unk>') out.push(0);
    else out.push(...llamaJs.encode(part, false, true));
  }
  return out;
}

describe('tokenizer.json tokenizer on the Llama-2 vocabulary', () => {
  it('reports the vocabulary and special tokens', () => {
    expect(tok.kind).toBe('tokenizer.json');
    expect(tok.vocabSize).toBe(32000);
    expect(tok.bosId).toBe(1);
    expect(tok.bosToken).toBe('<s>');
    expect([...tok.specialIds].sort()).toEqual([0, 1, 2]);
  });

  it('produces known ids', () => {
    expect(tok.tokenToId('▁Hello')).toBe(15043);
    expect(tok.idToToken(15043)).toBe('▁Hello');
    expect(tok.encode('[INST]', { addSpecialTokens: false })).toEqual([518, 25580, 29962]);
    expect(tok.encode('Hello world')).toEqual([1, 15043, 3186]);
    expect(tok.encode('')).toEqual([1]);
    expect(tok.encode('', { addSpecialTokens: false })).toEqual([]);
    // newline is the byte-fallback token <0x0A> = 13; a llama (U+1F999) is 4 byte tokens
    expect(tok.encode('\n', { addSpecialTokens: false })).toEqual([29871, 13]);
    expect(tok.encode('🦙', { addSpecialTokens: false })).toEqual([29871, 243, 162, 169, 156]);
    expect(tok.idToToken(13)).toBe('<0x0A>');
  });

  it('matches llama-tokenizer-js on the corpus', () => {
    for (const text of CORPUS) {
      if (text === '') continue; // llama-tokenizer-js returns [] for "" (known quirk); covered above
      expect(tok.encode(text), JSON.stringify(text)).toEqual(expectedIds(text));
    }
  });

  it('matches special tokens inside text, with a fresh ▁ per segment', () => {
    for (const text of ['a</s>b', '<s>[INST] hi [/INST]</s>', 'x <unk> y', '</s></s>']) {
      expect(tok.encode(text), text).toEqual(expectedIds(text));
    }
    expect(tok.encode('a</s>b', { addSpecialTokens: false })).toEqual([263, 2, 289]);
  });

  it('decodes back and skips special tokens on request', () => {
    for (const text of CORPUS) {
      const ids = tok.encode(text, { addSpecialTokens: false });
      expect(tok.decode(ids), JSON.stringify(text)).toBe(text);
    }
    const ids = tok.encode('Hello</s>');
    expect(tok.decode(ids)).toBe('<s> Hello</s>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('Hello');
  });

  it('handles empty and unknown ids in decode', () => {
    expect(tok.decode([])).toBe('');
    expect(tok.decode(new Int32Array(0))).toBe('');
    // ids outside the vocabulary are ignored, as the Rust tokenizers crate does
    expect(tok.decode([15043, 999999, -1, 3186])).toBe('Hello world');
    expect(tok.decode([1], { skipSpecialTokens: true })).toBe('');
  });

  it('decodes invalid byte-fallback runs like the Rust ByteFallback decoder', () => {
    // a run that is not valid UTF-8 becomes one U+FFFD per byte, even its valid part
    expect(tok.decode([243, 162])).toBe('\uFFFD\uFFFD');
    expect(tok.decode([243, 162, 169, 156])).toBe('🦙');
    const euro = [0xe2, 0x82, 0xac].map((b) => b + 3); // <0xE2><0x82><0xAC> = €
    expect(tok.decode(euro)).toBe('€');
    expect(tok.decode([...euro, 243, 162])).toBe('\uFFFD'.repeat(5));
    expect(tok.decode([...euro, 15043])).toBe('€ Hello');
    // a BOM spelled in bytes is kept, as Rust's String::from_utf8 does
    expect(tok.decode([0xef + 3, 0xbb + 3, 0xbf + 3, 15043])).toBe('\uFEFF Hello');
  });
});
