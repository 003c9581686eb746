import { describe, expect, it } from 'vitest';
import { StreamingDetokenizer } from '../src/detokenize.js';
import { loadTokenizer } from '../src/tokenizer/load.js';
import type { Tokenizer } from '../src/tokenizer/types.js';
import { CORPUS, GEMMA3_DIR, LLAMA2_DIR, PHI3SMALL_DIR } from './helpers/paths.js';

const llama = loadTokenizer(LLAMA2_DIR);

/** Stream `ids` one by one; return the deltas (flush last). */
function stream(tok: Tokenizer, ids: number[], skipSpecialTokens = false): string[] {
  const d = new StreamingDetokenizer(tok, { skipSpecialTokens });
  const deltas = ids.map((id) => d.push(id));
  deltas.push(d.flush());
  expect(d.text).toBe(deltas.join(''));
  return deltas;
}

/** No delta may contain U+FFFD that the full text lacks, nor a lone surrogate. */
function expectClean(deltas: string[], full: string): void {
  for (const delta of deltas) {
    expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(delta), JSON.stringify(delta)).toBe(false);
    if (!full.includes('\uFFFD')) expect(delta).not.toContain('\uFFFD');
  }
}

describe('StreamingDetokenizer on Llama-2 (SentencePiece with byte fallback)', () => {
  it('holds an emoji split over byte-fallback tokens until its last byte', () => {
    const ids = llama.encode('Hi 🦙 there', { addSpecialTokens: false });
    // ▁Hi ▁ <0xF0> <0x9F> <0xA6> <0x99> ▁there
    expect(ids).toContain(243);
    const deltas = stream(llama, ids);
    const first = ids.indexOf(243);
    expect(deltas.slice(0, first + 3).join('')).toBe('Hi ');
    expect(deltas.slice(first, first + 3)).toEqual(['', '', '']);
    expect(deltas[first + 3]).toBe('🦙');
    expect(deltas.join('')).toBe('Hi 🦙 there');
    expectClean(deltas, 'Hi 🦙 there');
  });

  it('streams a long run of byte-fallback tokens (longer than maxHeldTokens) without garbage', () => {
    const text = 'x ' + '🦙'.repeat(20) + '🏽👍🏽 done';
    const ids = llama.encode(text, { addSpecialTokens: false });
    expect(ids.filter((id) => id >= 3 && id < 259).length).toBeGreaterThan(80);
    const deltas = stream(llama, ids);
    expect(deltas.join('')).toBe(text);
    expectClean(deltas, text);
    // each llama appears as soon as its 4th byte arrives
    expect(deltas.filter((d) => d === '🦙').length).toBe(20);
  });

  it('keeps SentencePiece leading spaces (only the very first is dropped, as in decode)', () => {
    const ids = llama.encode('Hello world, how are you?', { addSpecialTokens: false });
    const deltas = stream(llama, ids);
    expect(deltas[0]).toBe('Hello');
    expect(deltas[1]).toBe(' world');
    expect(deltas.join('')).toBe('Hello world, how are you?');
    // a naive per-token decode would lose every space
    expect(ids.map((id) => llama.decode([id])).join('')).toBe('Helloworld,howareyou?');
  });

  it('equals the full decode on the corpus, with and without BOS', () => {
    for (const text of CORPUS) {
      for (const addSpecialTokens of [false, true]) {
        const ids = llama.encode(text, { addSpecialTokens });
        const full = llama.decode(ids);
        const deltas = stream(llama, ids);
        expect(deltas.join(''), JSON.stringify(text)).toBe(full);
        expectClean(deltas, full);
      }
    }
  });

  it('skips special tokens when asked', () => {
    const ids = [...llama.encode('Hello'), 2, ...llama.encode('again', { addSpecialTokens: false })];
    expect(stream(llama, ids).join('')).toBe(llama.decode(ids));
    expect(stream(llama, ids, true).join('')).toBe(llama.decode(ids, { skipSpecialTokens: true }));
    expect(stream(llama, ids, true).join('')).toBe('Hello again');
  });

  it('flushes an incomplete tail as U+FFFD and can be reset', () => {
    const d = new StreamingDetokenizer(llama);
    expect(d.pushMany(llama.encode('ok', { addSpecialTokens: false }))).toBe('ok');
    expect(d.push(243)).toBe('');
    expect(d.push(162)).toBe('');
    expect(d.flush()).toBe('\uFFFD\uFFFD'); // as decode([243, 162]): one U+FFFD per byte
    expect(d.text).toBe('ok\uFFFD\uFFFD');
    expect(d.tokens).toHaveLength(3);
    d.reset();
    expect(d.text).toBe('');
    expect(d.pushMany(llama.encode('Hello world', { addSpecialTokens: false }))).toBe('Hello world');
  });

  it('does not stall forever on a run of invalid bytes', () => {
    const d = new StreamingDetokenizer(llama, { maxHeldTokens: 8 });
    let emitted = '';
    for (let i = 0; i < 40; i++) emitted += d.push(3 + 0x80); // <0x80>, a lone continuation byte
    expect(emitted.length).toBeGreaterThan(0);
    expect(emitted).toMatch(/^\uFFFD+$/);
    emitted += d.flush();
    expect(emitted).toBe('\uFFFD'.repeat(40));
  });
});

describe('StreamingDetokenizer on other tokenizers', () => {
  it('Gemma 3: byte fallback without a dummy prefix', () => {
    const gemma = loadTokenizer(GEMMA3_DIR);
    for (const text of ['Hello 🦙 world', 'family 👨‍👩‍👧‍👦 ok', '日本語のテキスト', ' two  spaces ']) {
      const ids = gemma.encode(text);
      const deltas = stream(gemma, ids, true);
      expect(deltas.join('')).toBe(text);
      expectClean(deltas, text);
    }
  });

  it('Phi-3-small tiktoken: characters split across byte-level tokens', () => {
    const phi = loadTokenizer(PHI3SMALL_DIR);
    for (const text of CORPUS) {
      const ids = phi.encode(text);
      const full = phi.decode(ids);
      const deltas = stream(phi, ids);
      expect(deltas.join(''), JSON.stringify(text)).toBe(full);
      expectClean(deltas, full);
    }
    const ids = phi.encode('🦙');
    expect(ids.length).toBeGreaterThan(1);
    const deltas = stream(phi, ids);
    expect(deltas.slice(0, -2).every((s) => s === '')).toBe(true);
    expect(deltas.join('')).toBe('🦙');
  });
});
