/**
 * Bad input to the engine ends in a clear error: token ids are validated instead of wrapped, tokenizer
 * files are validated at load, chat templates render under limits, and a prompt that cannot fit the
 * context is refused before it is tokenized.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorOf } from '@mlxcel/tensor';
import { describe, expect, it } from 'vitest';
import { buildPrompt, ChatTemplate, HfTokenizer, promptIds, traceModel, type LoadedModel } from '../src/index.js';
import { LLAMA2_DIR } from './helpers/paths.js';
import { ToyModel } from './helpers/toy-model.js';

const llama2 = () => JSON.parse(readFileSync(join(LLAMA2_DIR, 'tokenizer.json'), 'utf8')) as Record<string, any>;

describe('token ids are validated, never wrapped', () => {
  const loaded = { dir: 'toy', model: new ToyModel(100), tokenizer: null, chatTemplate: null } as unknown as LoadedModel;
  it.each([
    [[4294967297], /prompt\[0\] = 4294967297 is outside the vocabulary \[0, 100\)/],
    [[1, 2.5], /prompt\[1\] = 2\.5 is not an integer token id/],
    [[1, Number.NaN], /prompt\[1\] = NaN is not an integer token id/],
    [[1, '7'], /prompt\[1\] = "7" is not a token id/],
    [[-1], /prompt\[0\] = -1 is outside/],
    [new BigInt64Array([2n ** 40n + 5n]), /prompt\[0\] = 1099511627781 is outside/],
    [new Float64Array([3.5]), /not an integer token id/],
  ])('%s', (ids, msg) => {
    const e = errorOf(() => promptIds(loaded, ids as never));
    expect(e.code).toBe('E_TOKEN_ID');
    expect(e.message).toMatch(msg);
  });
  it('valid ids pass; trace validates too', () => {
    expect([...promptIds(loaded, [0, 5, 99])]).toEqual([0, 5, 99]);
    expect(errorOf(() => traceModel(new ToyModel(10), [1, 2 ** 32 + 1])).message).toMatch(/trace: ids\[1\] = 4294967297 is outside the vocabulary \[0, 10\)/);
  });
});

describe('tokenizer.json is validated at load', () => {
  const build = (mutate: (j: Record<string, any>) => void) => {
    const j = llama2();
    mutate(j);
    return () => new HfTokenizer(j, { source: 'tokenizer.json' });
  };
  it.each([
    ['a huge vocabulary id', (j: any) => { j.model.vocab['▁the'] = 1e9; }, /model\.vocab\["▁the"\] = 1000000000 is outside \[0, 16777215\]/],
    ['a fractional id', (j: any) => { j.model.vocab['▁the'] = 3.5; }, /model\.vocab\["▁the"\] = 3\.5 is not an integer token id/],
    ['a string id', (j: any) => { j.model.vocab['▁the'] = '278'; }, /model\.vocab\["▁the"\] = "278" is not an integer token id/],
    ['two tokens with one id', (j: any) => { j.model.vocab['▁the'] = 0; }, /gives id 0 to both/],
    ['an unknown unk_token', (j: any) => { j.model.unk_token = '<nope>'; }, /model\.unk_token "<nope>" is not in the vocabulary/],
    ['an empty vocabulary', (j: any) => { j.model.vocab = {}; j.model.merges = []; }, /model\.vocab is empty/],
    ['no byte fallback and no unk', (j: any) => { j.model.byte_fallback = false; j.model.unk_token = null; }, /neither byte_fallback, an unk_token nor a ByteLevel/],
    ['a bad added token id', (j: any) => { j.added_tokens[0].id = -3; }, /added_tokens\[0\]\.id = -3 is outside/],
    ['a catastrophic pre-tokenizer regex', (j: any) => { j.pre_tokenizer = { type: 'Split', pattern: { Regex: '(a+)+$' }, behavior: 'Isolated', invert: false }; },
      /pre_tokenizer\.pattern\.Regex: the regex "\(a\+\)\+\$" nests repetition/],
    ['a nested one inside a Sequence normalizer', (j: any) => { j.normalizer.normalizers.push({ type: 'Replace', pattern: { Regex: '(\\w+\\s?)*$' }, content: '' }); },
      /normalizer\.normalizers\[2\]\.pattern\.Regex: .* nests repetition/],
  ])('%s is refused', (_what, mutate, msg) => {
    const e = errorOf(build(mutate));
    expect(e.code).toBe('TOKENIZER_FILE_INVALID');
    expect(e.message).toMatch(/^tokenizer\.json: /);
    expect(e.message).toMatch(msg);
  });
  it('the real file passes and reports its longest token', () => {
    const t = new HfTokenizer(llama2(), { source: 'tokenizer.json' });
    expect(t.maxTokenBytes).toBeGreaterThan(4);
    expect(t.maxTokenBytes).toBeLessThan(100);
  });
});

describe('chat templates render under limits', () => {
  const render = (src: string, limits?: Record<string, number>) => () => new ChatTemplate(src, 'evil.jinja').render([{ role: 'user', content: 'hi' }], { limits });
  it('range(100000000) is refused before the list is built', () => {
    const t0 = Date.now();
    const e = errorOf(render('{% for i in range(100000000) %}x{% endfor %}'));
    expect(e.code).toBe('CHAT_TEMPLATE_LIMIT');
    expect(e.message).toMatch(/^evil\.jinja: range\(0, 100000000, 1\) has 100000000 elements \(limit 100000\)/);
    expect(Date.now() - t0).toBeLessThan(2000);
  });
  it('nested loops stop at the step budget', () => {
    const e = errorOf(render('{% for i in range(10000) %}{% for j in range(10000) %}{{ j }}{% endfor %}{% endfor %}', { maxSteps: 200_000 }));
    expect(e.message).toMatch(/evaluated more than 200000 nodes/);
  });
  it('a doubling string stops at the size limit', () => {
    const e = errorOf(render('{% set ns = namespace(s="ab") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}', { maxChars: 1_000_000 }));
    expect(e.message).toMatch(/built a string of \d+ characters \(limit 1000000\)/);
  });
  it('a slow render stops at the time limit', () => {
    const e = errorOf(render('{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}', { maxMs: 200, maxSteps: 1e12 }));
    expect(e.message).toMatch(/ran longer than 200 ms/);
  });
  it('ordinary templates and range() calls still work', () => {
    expect(render('{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(1, 7, 2) %}{{ i }}{% endfor %}')()).toBe('012135');
  });
});

describe('a prompt that cannot fit the context is refused before tokenization', () => {
  it('4 MB against a 128-token context', () => {
    const tok = new HfTokenizer(llama2(), { source: 'tokenizer.json' });
    const t0 = Date.now();
    const e = errorOf(() => buildPrompt(tok, 'word '.repeat(800_000), { template: null, noChatTemplate: true, maxTokens: 128 }));
    expect(e.code).toBe('PROMPT_TOO_LONG');
    expect(e.message).toMatch(/the prompt is 4000000 bytes, at least \d+ tokens .* more than the model's 128-token context; it was not tokenized/);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(buildPrompt(tok, 'word '.repeat(20), { template: null, noChatTemplate: true, maxTokens: 128 }).ids.length).toBeGreaterThan(20);
  });
});
