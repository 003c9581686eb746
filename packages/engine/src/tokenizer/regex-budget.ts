/**
 * A budget on the regular expressions a tokenizer.json hands to the pre-tokenizer and normalizer.
 * They run on JavaScript's backtracking engine (the patterns use lookahead such as `\s+(?!\S)`, which
 * linear-time engines like RE2 do not support), so a pattern with nested repetition — `(a+)+$`,
 * `(\w+\s?)*$` — takes exponential time on inputs like "a"×40 + "b" and hangs the process inside a
 * synchronous `RegExp.exec` that nothing can interrupt.
 *
 * The budget is structural: repetition nesting depth ("star height") at most 1, i.e. no group that
 * repeats (`*`, `+`, `{n,}`, `{n,m}` with m > 1) may contain a repeated atom. Every released tokenizer
 * (GPT-2, Llama 3, Qwen, Phi-3/4, Gemma) has star height 1. A regex is also refused above 4 kB.
 * `safe-regex2` was tried for this and rejected: it fails on `(?i:` groups (Llama 3's pattern) and other
 * real patterns, so the check is done here on a small scanner of the ECMAScript syntax instead.
 */
import { MlxcelError } from '../errors.js';

export const MAX_PATTERN_LENGTH = 4096;

interface Frame {
  /** Deepest repetition nesting inside this group so far. */
  inner: number;
  /** Height of the last atom (what a following quantifier applies to). */
  last: number;
}

/** Star height of `pattern` (0 = no repetition); throws on syntax it cannot follow. */
export function starHeight(pattern: string): number {
  const stack: Frame[] = [{ inner: 0, last: 0 }];
  let i = 0;
  const top = () => stack[stack.length - 1]!;
  const atom = (h: number) => {
    top().last = h;
    top().inner = Math.max(top().inner, h);
  };
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === '\\') {
      // \p{..} / \P{..} / \u{..} / \k<name> / \xHH / \uHHHH / one escaped char: all single atoms.
      const n = pattern[i + 1];
      if ((n === 'p' || n === 'P' || n === 'u') && pattern[i + 2] === '{') i = pattern.indexOf('}', i) + 1 || pattern.length;
      else if (n === 'k' && pattern[i + 2] === '<') i = pattern.indexOf('>', i) + 1 || pattern.length;
      else i += 2;
      atom(0);
      continue;
    }
    if (c === '[') {
      // A character class is one atom; skip to its closing bracket (escapes and a leading ] included).
      i++;
      if (pattern[i] === '^') i++;
      if (pattern[i] === ']') i++;
      while (i < pattern.length && pattern[i] !== ']') i += pattern[i] === '\\' ? 2 : 1;
      i++;
      atom(0);
      continue;
    }
    if (c === '(') {
      // (?:  (?i:  (?=  (?!  (?<=  (?<!  (?<name>  or a plain group.
      i++;
      if (pattern[i] === '?') {
        i++;
        if (pattern[i] === '<' && pattern[i + 1] !== '=' && pattern[i + 1] !== '!') i = pattern.indexOf('>', i) + 1;
        else if (pattern[i] === '<') i += 2;
        else {
          while (i < pattern.length && /[a-zA-Z-]/.test(pattern[i]!)) i++;  // inline flags (?i: (?-i:
          if (pattern[i] === ':' || pattern[i] === '=' || pattern[i] === '!') i++;
        }
      }
      stack.push({ inner: 0, last: 0 });
      continue;
    }
    if (c === ')') {
      if (stack.length === 1) throw new SyntaxError(`unbalanced ")" at ${i}`);
      const g = stack.pop()!;
      i++;
      atom(g.inner);
      continue;
    }
    if (c === '*' || c === '+' || c === '?' || c === '{') {
      let repeats = c !== '?';
      if (c === '{') {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i));
        if (!m) { i++; atom(0); continue; }  // a literal "{"
        repeats = m[2] !== undefined ? m[3] === '' || Number(m[3]) > 1 : Number(m[1]) > 1;
        i += m[0].length;
      } else i++;
      if (pattern[i] === '?') i++;  // lazy
      if (repeats) {
        const h = top().last + 1;
        top().last = h;
        top().inner = Math.max(top().inner, h);
      }
      continue;
    }
    // | resets "last" (a quantifier cannot follow it); anything else is a literal atom.
    i++;
    if (c === '|') top().last = 0;
    else atom(0);
  }
  if (stack.length !== 1) throw new SyntaxError('unbalanced "("');
  return stack[0]!.inner;
}

/** Throws TOKENIZER_FILE_INVALID unless `pattern` is within the budget; `where` names the JSON path. */
export function checkPatternBudget(pattern: unknown, where: string): void {
  if (typeof pattern !== 'string') throw new MlxcelError('TOKENIZER_FILE_INVALID', `${where} must be a string, got ${JSON.stringify(pattern)}`);
  if (pattern.length > MAX_PATTERN_LENGTH)
    throw new MlxcelError('TOKENIZER_FILE_INVALID', `${where} is ${pattern.length} characters long (limit ${MAX_PATTERN_LENGTH})`);
  let h: number;
  try {
    h = starHeight(pattern);
  } catch (e) {
    throw new MlxcelError('TOKENIZER_FILE_INVALID', `${where}: cannot read the regex ${JSON.stringify(pattern.slice(0, 80))}: ${(e as Error).message}`);
  }
  if (h > 1)
    throw new MlxcelError(
      'TOKENIZER_FILE_INVALID',
      `${where}: the regex ${JSON.stringify(pattern.slice(0, 80))} nests repetition (star height ${h}); such patterns take exponential time ` +
        'on the backtracking engine, so they are refused (every released tokenizer has star height 1)',
    );
}
