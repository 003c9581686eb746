/**
 * GBNF, the grammar format of llama.cpp (`grammars/*.gbnf`), parsed into a GrammarBuilder.
 *
 *   rule ::= alternative ("|" alternative)*      names: letters, digits, '-' and '_'
 *   "literal" with \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH     [a-z0-9_] [^"\\] classes     .  any character
 *   ( group )   postfix * + ? {m} {m,} {m,n}   # comments   root rule: `root`
 *   <[123]> a token by id, <|tool_call|> a special token by its text (resolved through the tokenizer)
 *
 * As in llama.cpp a rule ends at the end of its line unless inside parentheses or right after "|";
 * a line that starts with "|" also continues the previous rule (a common hand-written layout).
 */
import { MlxcelError } from '../errors.js';
import { type Element, GrammarBuilder, type Grammar, type Sequence } from './grammar.js';

export interface GbnfOptions {
  /** Resolves `<token text>` references to a token id (undefined: unknown token). */
  tokenId?: (text: string) => number | undefined;
  /** Root rule name, default `root`. */
  root?: string;
  /** Name used in error messages (default "grammar"). */
  sourceName?: string;
}

const MAX_REPEAT = 10_000;

export function parseGbnf(text: string, opts: GbnfOptions = {}): Grammar {
  return new GbnfParser(text, opts).parse();
}

class GbnfParser {
  private pos = 0;
  private readonly b: GrammarBuilder;
  private readonly source: string;

  constructor(private readonly src: string, private readonly opts: GbnfOptions) {
    this.source = opts.sourceName ?? 'grammar';
    this.b = new GrammarBuilder(this.source);
  }

  parse(): Grammar {
    if (typeof this.src !== 'string') throw new MlxcelError('GRAMMAR_INVALID', `${this.source}: a GBNF grammar must be a string`);
    this.space(true);
    while (this.pos < this.src.length) {
      this.ruleDef();
      this.space(true);
    }
    return this.b.build(this.opts.root ?? 'root');
  }

  private fail(msg: string, at = this.pos): never {
    let line = 1, col = 1;
    for (let i = 0; i < at && i < this.src.length; i++) {
      if (this.src[i] === '\n') { line++; col = 1; } else col++;
    }
    throw new MlxcelError('GRAMMAR_INVALID', `${this.source}: line ${line}, column ${col}: ${msg}`);
  }

  private where(at = this.pos): string {
    let line = 1, col = 1;
    for (let i = 0; i < at; i++) { if (this.src[i] === '\n') { line++; col = 1; } else col++; }
    return `line ${line}, column ${col}`;
  }

  /** Skips spaces and comments; newlines too when `newlines`. */
  private space(newlines: boolean): void {
    const s = this.src;
    while (this.pos < s.length) {
      const c = s[this.pos]!;
      if (c === ' ' || c === '\t' || c === '\r') this.pos++;
      else if (c === '#') { while (this.pos < s.length && s[this.pos] !== '\n') this.pos++; }
      else if (c === '\n' && newlines) this.pos++;
      else break;
    }
  }

  /** After a sequence at the top level: is the next line a "| …" continuation? */
  private continuationLine(): boolean {
    const save = this.pos;
    this.space(true);
    if (this.src[this.pos] === '|') return true;
    this.pos = save;
    return false;
  }

  private name(): string {
    const m = /^[A-Za-z0-9_-]+/.exec(this.src.slice(this.pos, this.pos + 200));
    if (!m) this.fail(`expected a rule name, found ${JSON.stringify(this.src.slice(this.pos, this.pos + 10))}`);
    this.pos += m[0].length;
    return m[0];
  }

  private ruleDef(): void {
    const name = this.name();
    this.space(false);
    if (!this.src.startsWith('::=', this.pos)) this.fail(`expected "::=" after rule name "${name}"`);
    this.pos += 3;
    this.space(true);
    const alts = this.alternatives(false);
    if (this.b.has(name)) this.fail(`rule "${name}" is defined twice`);
    this.b.define(name, alts);
    this.space(false);
    if (this.pos < this.src.length && this.src[this.pos] !== '\n') this.fail(`unexpected ${JSON.stringify(this.src[this.pos])} after the rule "${name}"`);
  }

  private alternatives(nested: boolean): Sequence[] {
    const alts: Sequence[] = [this.sequence(nested)];
    for (;;) {
      if (this.src[this.pos] === '|' || (!nested && this.continuationLine())) {
        this.pos++;
        this.space(true);
        alts.push(this.sequence(nested));
      } else break;
    }
    return alts;
  }

  private sequence(nested: boolean): Sequence {
    const seq: Sequence = [];
    let last: Element[] | null = null; // the atom a postfix operator applies to
    for (;;) {
      this.space(nested);
      const c = this.src[this.pos];
      if (c === undefined || c === '|' || c === ')' || c === '\n') break;
      const start = this.pos;
      let atom: Element[];
      if (c === '"') atom = this.literal();
      else if (c === '[') atom = [this.charClass()];
      else if (c === '.') { this.pos++; atom = [GrammarBuilder.cls([0, 0x10ffff])]; }
      else if (c === '(') {
        this.pos++;
        this.space(true);
        const alts = this.alternatives(true);
        this.space(true);
        if (this.src[this.pos] !== ')') this.fail('expected ")" to close the group', start);
        this.pos++;
        atom = [GrammarBuilder.ref(this.b.helper('group', alts))];
      } else if (c === '<') atom = [this.tokenRef()];
      else if (c === '*' || c === '+' || c === '?' || c === '{') {
        if (!last) this.fail(`"${c}" has nothing to repeat`);
        seq.length -= last.length;
        const rep = this.postfix(last);
        seq.push(...rep);
        last = null;
        continue;
      } else if (/[A-Za-z0-9_-]/.test(c)) {
        const n = this.name();
        this.space(nested);
        if (this.src.startsWith('::=', this.pos)) this.fail(`rule "${n}" starts before the previous rule ended (missing newline?)`, start);
        atom = [GrammarBuilder.ref(this.b.rule(n, this.where(start)))];
      } else this.fail(`unexpected character ${JSON.stringify(c)}`);
      seq.push(...atom);
      last = atom;
    }
    return seq;
  }

  private postfix(atom: Element[]): Element[] {
    const c = this.src[this.pos]!;
    const unit: Sequence = atom;
    if (c === '*') { this.pos++; return [this.b.star(unit)]; }
    if (c === '+') { this.pos++; return this.b.plus(unit); }
    if (c === '?') { this.pos++; return [this.b.opt(unit)]; }
    // {m}, {m,}, {m,n}
    const m = /^\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}/.exec(this.src.slice(this.pos, this.pos + 40));
    if (!m) this.fail('malformed repetition: expected {m}, {m,} or {m,n}');
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
    if (max < min) this.fail(`repetition {${min},${max}} has max < min`);
    if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) this.fail(`repetition bound over ${MAX_REPEAT}`);
    this.pos += m[0].length;
    return this.b.repeat(unit, min, max);
  }

  private literal(): Element[] {
    const start = this.pos;
    this.pos++; // "
    let s = '';
    while (this.src[this.pos] !== '"') {
      if (this.pos >= this.src.length || this.src[this.pos] === '\n') this.fail('unterminated string literal', start);
      s += String.fromCodePoint(this.char());
    }
    this.pos++;
    return GrammarBuilder.lit(s);
  }

  /** One (possibly escaped) character inside a literal or class, as a code point. */
  private char(): number {
    const s = this.src;
    const c = s.codePointAt(this.pos)!;
    if (c !== 0x5c) { this.pos += c > 0xffff ? 2 : 1; return c; }
    const e = s[this.pos + 1];
    const simple: Record<string, number> = { n: 10, r: 13, t: 9, '\\': 92, '"': 34, '[': 91, ']': 93, '-': 45, '^': 94, '/': 47 };
    if (e !== undefined && e in simple) { this.pos += 2; return simple[e]!; }
    const hexLen = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
    if (hexLen) {
      const h = s.slice(this.pos + 2, this.pos + 2 + hexLen);
      if (!new RegExp(`^[0-9a-fA-F]{${hexLen}}$`).test(h)) this.fail(`malformed escape \\${e}${h}`);
      const v = parseInt(h, 16);
      if (v > 0x10ffff) this.fail(`escape \\${e}${h} is beyond U+10FFFF`);
      this.pos += 2 + hexLen;
      return v;
    }
    this.fail(`unknown escape \\${e ?? ''}`);
  }

  private charClass(): Element {
    const start = this.pos;
    this.pos++; // [
    let neg = false;
    if (this.src[this.pos] === '^') { neg = true; this.pos++; }
    const ranges: number[] = [];
    while (this.src[this.pos] !== ']') {
      if (this.pos >= this.src.length) this.fail('unterminated character class', start);
      const lo = this.char();
      let hi = lo;
      if (this.src[this.pos] === '-' && this.src[this.pos + 1] !== ']') {
        this.pos++;
        hi = this.char();
        if (hi < lo) this.fail(`character range is reversed (${String.fromCodePoint(lo)}-${String.fromCodePoint(hi)})`);
      }
      ranges.push(lo, hi);
    }
    this.pos++;
    if (!ranges.length && !neg) this.fail('empty character class []', start);
    return GrammarBuilder.cls(ranges, neg);
  }

  private tokenRef(): Element {
    const start = this.pos;
    const end = this.src.indexOf('>', this.pos + 1);
    if (end < 0) this.fail('unterminated token reference "<…>"', start);
    const inner = this.src.slice(this.pos + 1, end);
    this.pos = end + 1;
    const byId = /^\[(\d+)\]$/.exec(inner);
    if (byId) return { t: 'token', id: Number(byId[1]) };
    const text = `<${inner}>`;
    const id = this.opts.tokenId?.(text);
    if (id === undefined) this.fail(`unknown token ${text} (the tokenizer has no such token)`, start);
    return { t: 'token', id };
  }
}
