import { describe, expect, test } from 'vitest';
import { BatchScheduler, compileConstraint, generate, jsonSchemaGrammar, loadTokenizer, parseGbnf, vocabularyOf } from '../src/index.js';
import { demoModel } from './helpers/demo.js';
import { GEMMA3_DIR, LLAMA2_DIR, PHI3SMALL_DIR } from './helpers/paths.js';

const allowed = (mask: Uint32Array, t: number) => (mask[t >>> 5]! & (1 << (t & 31))) !== 0;

describe('GBNF refusals name the construct', () => {
  const cases: [string, RegExp][] = [
    ['root ::= foo\n', /rule "foo" is used at line 1, column 10 but never defined/],
    ['root ::= "abc\n', /line 1, column 10: unterminated string literal/],
    ['root ::= expr\nexpr ::= expr "+" "1" | "1"\n', /left recursion is not supported: expr -> expr/],
    ['root ::= [a-z]{3,1}\n', /repetition \{3,1\} has max < min/],
    ['root ::= ( "a" \n', /expected "\)" to close the group/],
    ['root ::= "a"\nroot ::= "b"\n', /rule "root" is defined twice/],
    ['start ::= "a"\n', /no "root" rule/],
    ['root ::= [z-a]\n', /character range is reversed/],
    ['root ::= <|nope|>\n', /unknown token <\|nope\|>/],
    ['root ::= "\\q"\n', /unknown escape \\q/],
    ['root ::= a\na ::= a\n', /can never finish matching|left recursion/],
  ];
  for (const [g, re] of cases) test(JSON.stringify(g), () => expect(() => parseGbnf(g)).toThrow(re));
  test('llama.cpp layout: multi-line groups, comments, continuation lines', () => {
    const g = parseGbnf('# c\nroot ::= (\n  "a" | # x\n  "b"\n) tail\ntail ::= "x"\n       | "y"\n');
    expect(g.ruleNames).toContain('tail');
  });
});

describe('JSON Schema refusals name the keyword and where it is', () => {
  const cases: [unknown, RegExp][] = [
    [{ not: { type: 'string' } }, /at #\/not: keyword "not" is not supported/],
    [{ type: 'array', uniqueItems: true }, /#\/uniqueItems: keyword "uniqueItems" is not supported/],
    [{ type: 'object', properties: { n: { type: 'integer', maximum: 3 } } }, /#\/properties\/n\/maximum/],
    [{ oneOf: [{ type: 'integer' }, { type: 'number' }] }, /oneOf branches 0 and 1 can match the same value/],
    [{ $ref: '#/$defs/missing' }, /does not resolve \(no "\$defs"\)/],
    [{ $ref: 'https://example.com/s.json' }, /only local references/],
    [false, /the schema `false` matches no value/],
    [{ type: 'strin' }, /unknown type "strin"/],
    [{ type: 'string', pattern: '(?=a)b' }, /lookaround/],
    [{ type: 'string', format: 'hostname' }, /format "hostname" is not supported/],
    [{ type: 'array', minItems: 3, maxItems: 1 }, /maxItems is below minItems/],
  ];
  for (const [s, re] of cases) test(JSON.stringify(s), () => expect(() => jsonSchemaGrammar(s)).toThrow(re));
  test('invalid JSON text', () => expect(() => jsonSchemaGrammar('{nope')).toThrow(/not valid JSON/));
});

describe('masks over real vocabularies', () => {
  test('EOS is allowed exactly when the grammar accepts', () => {
    const tok = loadTokenizer(LLAMA2_DIR);
    const c = compileConstraint({ grammar: 'root ::= "ab" "c"?\n' }, tok, { eosIds: [2] })!;
    const m = c.start();
    const mask = new Uint32Array(Math.ceil(c.vocab.size / 32));
    m.fillMask(mask);
    expect(allowed(mask, 2)).toBe(false);
    expect(m.accept(tok.tokenToId('ab')!)).toBe(true);
    m.fillMask(mask);
    expect(allowed(mask, 2)).toBe(true);
    expect(allowed(mask, tok.tokenToId('c')!)).toBe(true);
    expect(m.accept(tok.tokenToId('c')!)).toBe(true);
    m.fillMask(mask);
    expect([...mask].reduce((n, w) => n + popcount(w), 0)).toBe(1); // only EOS
  });

  test('Gemma 262k vocabulary: SentencePiece ▁, byte fallback and a character split across tokens', () => {
    const tok = loadTokenizer(GEMMA3_DIR);
    const v = vocabularyOf(tok);
    expect(v.style).toBe('sentencepiece');
    const c = compileConstraint({ grammar: 'root ::= " " [ぁ-ん]{1,3} "。"\n' }, tok, { eosIds: tok.eosIds })!;
    const m = c.start();
    const mask = new Uint32Array(Math.ceil(c.vocab.size / 32));
    m.fillMask(mask);
    expect(allowed(mask, tok.tokenToId('▁')!)).toBe(true);
    expect(allowed(mask, tok.tokenToId('a')!)).toBe(false);
    expect(m.accept(tok.tokenToId('▁')!)).toBe(true);
    // あ = E3 81 82: the byte-fallback pieces one by one.
    m.fillMask(mask);
    const e3 = tok.tokenToId('<0xE3>')!;
    expect(allowed(mask, e3)).toBe(true);
    expect(allowed(mask, tok.tokenToId('<0xE4>')!)).toBe(false); // U+4000.. cannot be hiragana
    expect(m.accept(e3)).toBe(true);
    m.fillMask(mask);
    expect(allowed(mask, tok.tokenToId('<0x81>')!)).toBe(true);
    expect(allowed(mask, tok.tokenToId('<0x30>')!)).toBe(false);
    expect(m.accept(tok.tokenToId('<0x81>')!)).toBe(true);
    expect(m.accept(tok.tokenToId('<0x82>')!)).toBe(true);
    m.fillMask(mask);
    expect(allowed(mask, tok.tokenToId('。')!)).toBe(true);
    expect(allowed(mask, tok.eosIds[0]!)).toBe(false);
  });

  test('tiktoken vocabulary (cl100k) bytes', () => {
    const tok = loadTokenizer(PHI3SMALL_DIR);
    const v = vocabularyOf(tok);
    expect(v.style).toBe('tiktoken');
    const id = tok.encode(' hello', { addSpecialTokens: false });
    expect(id.length).toBe(1);
    expect(Buffer.from(v.bytes[id[0]!]!).toString()).toBe(' hello');
  });
});

describe('generation under a constraint', () => {
  test('a tight token budget still ends in valid JSON (shortest completion)', async () => {
    const m = demoModel();
    for (const seed of [1, 2, 3, 4]) {
      const text = await generate(m, 'x', { noChatTemplate: true, temperature: 1, seed, maxTokens: 12, responseFormat: { type: 'json_object' } }).text();
      expect(() => JSON.parse(text), text).not.toThrow();
    }
  });

  test('the batch scheduler constrains each request and matches generate()', async () => {
    const m = demoModel();
    const schema = { type: 'object', properties: { a: { type: 'integer' }, b: { enum: ['x', 'y'] } }, required: ['a', 'b'], additionalProperties: false };
    const opts = (seed: number) => ({ noChatTemplate: true, temperature: 1, seed, maxTokens: 40, responseFormat: { type: 'json_schema' as const, schema } });
    const alone = await Promise.all([1, 2].map((s) => generate(m, 'q', opts(s)).text()));
    const sched = new BatchScheduler(m, { maxBatch: 4 });
    const batched = await Promise.all([1, 2].map((s) => sched.submit('q', opts(s)).text()));
    expect(batched).toEqual(alone);
    for (const t of batched) expect(Object.keys(JSON.parse(t))).toEqual(['a', 'b']);
  });

  test('a malformed grammar fails the request with a clear error', async () => {
    const m = demoModel();
    await expect(generate(m, 'x', { noChatTemplate: true, grammar: 'root ::= (' }).text()).rejects.toThrow(/grammar: line 1/);
  });
});

function popcount(w: number): number {
  let n = 0;
  for (let x = w >>> 0; x; x &= x - 1) n++;
  return n;
}

describe('the cached mask equals a full-stack check of every token', () => {
  // Reference: matcher.fits(t, Infinity) walks t's bytes through the whole stack set (no cache).
  const tok = loadTokenizer(LLAMA2_DIR);
  const specs = [
    { responseFormat: { type: 'json_object' as const } },
    { responseFormat: { type: 'json_schema' as const, schema: { type: 'object', properties: { s: { type: 'string', maxLength: 5 }, n: { type: 'array', items: { type: 'integer' }, maxItems: 2 } }, required: ['s'] } } },
    { grammar: 'root ::= ("let " [a-z]+ " = " [0-9]{1,3} ";\\n"){1,3}\n' },
  ];
  for (const [k, spec] of specs.entries()) {
    test(`spec ${k}`, () => {
      const c = compileConstraint(spec, tok, { eosIds: [2] })!;
      const m = c.start();
      const mask = new Uint32Array(Math.ceil(c.vocab.size / 32));
      let seed = 17 + k;
      const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
      for (let step = 0; step < 8; step++) {
        m.fillMask(mask);
        const ok: number[] = [];
        const wrong: string[] = [];
        for (let t = 0; t < c.vocab.size; t++) {
          const want = m.fits(t, Infinity);
          if (allowed(mask, t) !== want) wrong.push(`${t} ${JSON.stringify(tok.idToToken(t))} should be ${want ? 'allowed' : 'masked'}`);
          if (want && t !== 2) ok.push(t);
        }
        expect(wrong, `step ${step}`).toEqual([]);
        if (!ok.length) break;
        // Prefer short tokens so the walk goes deeper into the structure.
        const short = ok.filter((t) => c.vocab.bytes[t]!.length <= 2);
        const pool = short.length && rnd() < 0.7 ? short : ok;
        expect(m.accept(pool[Math.floor(rnd() * pool.length)]!)).toBe(true);
      }
    });
  }
});
