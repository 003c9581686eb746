// The pre-tokenizer regex budget: nested repetition is refused at load (it hangs the backtracking
// engine: `(a+)+$` on "a"×40 + "b"), every real tokenizer pattern passes.
import { describe, expect, it } from 'vitest';
import { checkPatternBudget, starHeight } from '../src/tokenizer/regex-budget.js';

const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

describe('starHeight', () => {
  it.each([
    [GPT2, 1], [LLAMA3, 1], [QWEN2, 1], [' ', 0], ['\\d{1,3}', 1], ['[(]+', 1], ['(?<n>x+)y', 1], ['(ab){1,3}c+', 1],
    ['(a+)+$', 2], ['(\\w+\\s?)*$', 2], ['((a)+b)*', 2], ['(?:a{2,})*', 2], ['(?:(?:a*)*)*', 3], ['x{2}', 1], ['x{1}', 0], ['a{', 0],
  ])('%s → %i', (p, h) => {
    expect(starHeight(p)).toBe(h);
  });
});

describe('checkPatternBudget', () => {
  it('refuses nested repetition naming the JSON path', () => {
    expect(() => checkPatternBudget('(a+)+$', 'tokenizer.json pre_tokenizer.pattern.Regex')).toThrow(
      /tokenizer\.json pre_tokenizer\.pattern\.Regex: the regex "\(a\+\)\+\$" nests repetition \(star height 2\)/,
    );
  });
  it('refuses non-strings, unbalanced groups and over-long patterns; accepts the real ones', () => {
    expect(() => checkPatternBudget(12, 'p')).toThrow(/p must be a string/);
    expect(() => checkPatternBudget('(a', 'p')).toThrow(/cannot read the regex/);
    expect(() => checkPatternBudget('a'.repeat(5000), 'p')).toThrow(/5000 characters long/);
    for (const p of [GPT2, LLAMA3, QWEN2]) expect(() => checkPatternBudget(p, 'p')).not.toThrow();
  });
});
