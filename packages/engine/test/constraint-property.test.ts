/**
 * Property tests: a random-weight model (the demo checkpoint: real Llama-2/Phi-3 tokenizer) sampled at
 * temperature 1 under each constraint must produce, for every seed, text the constraint's own
 * validator accepts — ajv for the JSON Schemas, an independent parser for each GBNF grammar.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, test } from 'vitest';
import { generate } from '../src/index.js';
import { demoModel } from './helpers/demo.js';
import { FIXTURES } from './helpers/paths.js';

const SEEDS = [1, 2, 3];
const MAX_TOKENS = 80;
const schemas = JSON.parse(readFileSync(join(FIXTURES, 'structured/schemas.json'), 'utf8')) as { name: string; schema: unknown }[];

async function run(opts: Parameters<typeof generate>[2], seed: number): Promise<{ text: string; finish: string; tokens: number }> {
  const m = demoModel();
  const gen = generate(m, 'Answer in the requested format:', { ...opts, noChatTemplate: true, temperature: 1, seed, maxTokens: MAX_TOKENS });
  const text = await gen.text();
  const st = await gen.stats;
  return { text, finish: st.finishReason, tokens: st.generatedTokens };
}

describe('JSON Schema outputs validate with ajv', () => {
  const AjvCtor = (Ajv2020 as unknown as { default?: typeof Ajv2020 }).default ?? Ajv2020;
  const ajv = new AjvCtor({ strict: false, allErrors: true });
  ((addFormats as unknown as { default?: typeof addFormats }).default ?? addFormats)(ajv);
  test('at least 50 schemas in the corpus', () => expect(schemas.length).toBeGreaterThanOrEqual(50));
  for (const { name, schema } of schemas) {
    test(name, async () => {
      const validate = ajv.compile(schema as object);
      for (const seed of SEEDS) {
        const { text, finish, tokens } = await run({ responseFormat: { type: 'json_schema', schema } }, seed);
        let value: unknown;
        expect(() => (value = JSON.parse(text)), `seed ${seed}: not JSON (${finish}, ${tokens} tokens): ${JSON.stringify(text)}`).not.toThrow();
        const ok = validate(value);
        expect(ok, `seed ${seed}: ${JSON.stringify(text)} fails: ${ajv.errorsText(validate.errors)}`).toBe(true);
        expect(finish).toBe('eos');
      }
    });
  }
  test('json_object gives a JSON object', async () => {
    for (const seed of SEEDS) {
      const { text, finish } = await run({ responseFormat: { type: 'json_object' } }, seed);
      const v = JSON.parse(text);
      expect(typeof v === 'object' && v !== null && !Array.isArray(v), text).toBe(true);
      expect(finish).toBe('eos');
    }
  });
});

// ---- independent checkers for the GBNF fixtures

/** A tiny recursive-descent helper over a string. */
class Cursor {
  i = 0;
  constructor(readonly s: string) {}
  eat(t: string): boolean {
    if (this.s.startsWith(t, this.i)) { this.i += t.length; return true; }
    return false;
  }
  re(r: RegExp): string | null {
    const m = new RegExp(r.source, 'y' + r.flags.replace('y', ''));
    m.lastIndex = this.i;
    const x = m.exec(this.s);
    if (!x) return null;
    this.i += x[0].length;
    return x[0];
  }
  get done(): boolean { return this.i === this.s.length; }
}

function arithmetic(s: string): boolean {
  const c = new Cursor(s);
  const expr = (): boolean => { if (!term()) return false; while (c.eat('+') || c.eat('-')) if (!term()) return false; return true; };
  const term = (): boolean => { if (!factor()) return false; while (c.eat('*') || c.eat('/')) if (!factor()) return false; return true; };
  const factor = (): boolean => {
    if (c.re(/[0-9]{1,4}(?![0-9])/)) return true;
    if (c.eat('(')) return expr() && c.eat(')');
    if (c.eat('-')) return factor();
    return false;
  };
  return expr() && c.done;
}

function sexpr(s: string): boolean {
  const c = new Cursor(s);
  const one = (): boolean => {
    if (c.re(/[a-z][a-z0-9-]{0,6}(?![a-z0-9-])|[0-9]{1,4}(?![0-9a-z-])/)) return true;
    if (!c.eat('(')) return false;
    if (c.eat(')')) return true;
    if (!one()) return false;
    while (c.eat(' ')) if (!one()) return false;
    return c.eat(')');
  };
  return one() && c.done;
}

function program(s: string): boolean {
  const c = new Cursor(s);
  const ident = () => c.re(/[a-z][a-z0-9_]{0,5}(?![a-z0-9_])/) !== null;
  const operand = (): boolean => ident() || c.re(/[0-9]{1,3}(?![0-9])/) !== null || (c.eat('(') && expr() && c.eat(')'));
  const expr = (): boolean => { if (!operand()) return false; while (c.eat(' + ') || c.eat(' - ') || c.eat(' * ')) if (!operand()) return false; return true; };
  const cond = () => expr() && (c.eat(' < ') || c.eat(' > ') || c.eat(' == ') || c.eat(' != ')) && expr();
  const block = (): boolean => { let n = 0; while (n < 3 && !c.s.startsWith('}', c.i)) { if (!stmt()) return false; n++; } return n >= 1 && c.eat('}'); };
  const stmt = (): boolean => {
    if (c.eat('let ')) return ident() && c.eat(' = ') && expr() && c.eat(';\n');
    if (c.eat('print(')) return expr() && c.eat(');\n');
    if (c.eat('if (')) {
      if (!(cond() && c.eat(') {\n') && block())) return false;
      if (c.eat(' else {\n') && !block()) return false;
      return c.eat('\n');
    }
    if (c.eat('while (')) return cond() && c.eat(') {\n') && block() && c.eat('\n');
    return false;
  };
  let n = 0;
  while (!c.done) { if (!stmt()) return false; n++; }
  return n >= 1;
}

const checkers: Record<string, (s: string) => boolean> = {
  arithmetic,
  list: (s) => /^(- [^\r\n\x0b\x0c\x85\u2028\u2029]+\n)+$/u.test(s),
  'word-array': (s) => /^\[ ?("[a-z]{1,8}"( ?, ?"[a-z]{1,8}")*)? ?\]$/.test(s),
  json: (s) => { try { const v = JSON.parse(s); return typeof v === 'object' && v !== null && !Array.isArray(v) && s.trimStart().startsWith('{'); } catch { return false; } },
  chess: (s) => {
    const move = '(?:(?:(?:[a-h]x)?[a-h][1-8](?:=[NBKQR])?)|(?:[NBKQR][a-h]?[1-8]?x?[a-h][1-8])|(?:O-O(?:-O)?))[+#]?';
    return new RegExp(`^1\\. ${move} ${move}\\n(?:[1-9]\\. ${move} ${move}\\n){0,3}$`).test(s);
  },
  datetime: (s) => /^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$/.test(s),
  answer: (s) => /^(yes|no), because [a-z][a-z ]{0,29}\.$/.test(s),
  csv: (s) => /^(?:[a-z0-9]{1,8}|"[^"\n]{0,8}")(?:,(?:[a-z0-9]{1,8}|"[^"\n]{0,8}")){0,3}(?:\n(?:[a-z0-9]{1,8}|"[^"\n]{0,8}")(?:,(?:[a-z0-9]{1,8}|"[^"\n]{0,8}")){0,3}){0,3}\n?$/.test(s),
  program,
  sexpr,
  kana: (s) => /^[ぁ-ん]{1,12}(、[ぁ-ん]{1,12})?。$/u.test(s),
};

describe('GBNF outputs parse with an independent parser', () => {
  const dir = join(FIXTURES, 'structured/grammars');
  const files = readdirSync(dir).filter((f) => f.endsWith('.gbnf')).sort();
  test('at least 10 grammars, each with a checker', () => {
    expect(files.length).toBeGreaterThanOrEqual(10);
    for (const f of files) expect(checkers[f.replace('.gbnf', '')], f).toBeTypeOf('function');
  });
  for (const f of files) {
    test(f, async () => {
      const grammar = readFileSync(join(dir, f), 'utf8');
      const check = checkers[f.replace('.gbnf', '')]!;
      for (const seed of SEEDS) {
        const { text, finish, tokens } = await run({ grammar }, seed);
        expect(check(text), `seed ${seed} (${finish}, ${tokens} tokens): ${JSON.stringify(text)}`).toBe(true);
        expect(finish).toBe('eos');
      }
    });
  }
});
