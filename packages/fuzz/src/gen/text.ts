/**
 * Tokenizer files, chat templates and token ids: mutations of the real Llama-2 tokenizer.json and the
 * real chat templates in fixtures/, templates written to blow up (huge ranges, nested loops, doubling
 * strings), and ids that Int32Array.from would wrap.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Expect, FuzzCase } from '../types.js';
import { FIXTURES, variant } from './fs-util.js';

type Json = Record<string, any>;
const llama2 = (): Json => JSON.parse(readFileSync(join(FIXTURES, 'tokenizers', 'llama2', 'tokenizer.json'), 'utf8'));
const invalid = (message?: RegExp): Expect => ({ error: 'TOKENIZER_FILE_INVALID', message });

function tokenizerCases(full: boolean): FuzzCase[] {
  const out: FuzzCase[] = [];
  const text = 'The quick brown fox jumps over the lazy dog. 12345';
  const add = (id: string, body: string | 'dir' | 'fifo', expect: Expect) =>
    out.push({ id: `tokenizer/${id}`, cls: 'tokenizer', op: 'tokenizer', args: { dir: variant('tokenizers/llama2', { 'tokenizer.json': body }), text }, expect });
  const mut = (id: string, f: (j: Json) => void, expect: Expect) => {
    const j = llama2();
    f(j);
    add(id, JSON.stringify(j), expect);
  };
  add('valid', JSON.stringify(llama2()), { ok: true });
  mut('vocab-id-huge', (j) => { j.model.vocab['▁the'] = 1e9; }, invalid(/model\.vocab\["▁the"\] = 1000000000/));
  mut('vocab-id-2^53', (j) => { j.model.vocab['▁the'] = 2 ** 53; }, invalid(/model\.vocab/));
  mut('vocab-id-fractional', (j) => { j.model.vocab['▁the'] = 3.5; }, invalid(/not an integer token id/));
  mut('vocab-id-string', (j) => { j.model.vocab['▁the'] = '278'; }, invalid(/not an integer token id/));
  mut('vocab-id-negative', (j) => { j.model.vocab['▁the'] = -2; }, invalid(/outside/));
  mut('vocab-id-duplicate', (j) => { j.model.vocab['▁the'] = 5; }, invalid(/gives id 5 to both/));
  mut('vocab-empty', (j) => { j.model.vocab = {}; j.model.merges = []; }, invalid(/vocab is empty/));
  mut('vocab-array', (j) => { j.model.vocab = [1, 2]; }, invalid(/model\.vocab/));
  mut('unk-unknown', (j) => { j.model.unk_token = '<nope>'; }, invalid(/unk_token "<nope>" is not in the vocabulary/));
  mut('unk-number', (j) => { j.model.unk_token = 5; }, invalid(/unk_token must be a string/));
  mut('no-byte-fallback-no-unk', (j) => { j.model.byte_fallback = false; j.model.unk_token = null; }, invalid(/neither byte_fallback/));
  mut('no-model', (j) => { delete j.model; }, invalid(/model/));
  mut('model-type-bogus', (j) => { j.model.type = 'Bogus'; }, invalid(/model\.type "Bogus"/));
  mut('added-id-fractional', (j) => { j.added_tokens[0].id = 0.5; }, invalid(/added_tokens\[0\]\.id/));
  mut('added-id-huge', (j) => { j.added_tokens[0].id = 2 ** 40; }, invalid(/added_tokens\[0\]\.id/));
  mut('added-content-empty', (j) => { j.added_tokens[0].content = ''; }, invalid(/added_tokens\[0\]\.content/));
  mut('added-not-list', (j) => { j.added_tokens = {}; }, invalid(/added_tokens must be a list/));
  for (const [name, re] of [['nested-plus', '(a+)+$'], ['nested-star', '(\\w+\\s?)*$'], ['nested-3', '((a*)*)*'], ['nested-brace', '(?:a{2,})+'], ['unbalanced', '(a']]) {
    mut(`pre-tokenizer-${name}`, (j) => { j.pre_tokenizer = { type: 'Split', pattern: { Regex: re }, behavior: 'Isolated', invert: false }; }, invalid(/pre_tokenizer\.pattern\.Regex/));
    mut(`normalizer-${name}`, (j) => { j.normalizer.normalizers.push({ type: 'Replace', pattern: { Regex: re }, content: '' }); }, invalid(/normalizer\.normalizers\[2\]\.pattern\.Regex/));
  }
  mut('pre-tokenizer-sequence-nested', (j) => { j.pre_tokenizer = { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: '(a|aa)+(b+)+' }, behavior: 'Isolated', invert: false }] }; }, invalid(/pretokenizers\[0\]\.pattern\.Regex/));
  mut('pre-tokenizer-gpt2-ok', (j) => { j.pre_tokenizer = { type: 'Split', pattern: { Regex: "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+" }, behavior: 'Isolated', invert: false }; }, { cleanErrorOrOk: /round trip/ });
  add('not-json', '{"model": ', { error: 'JSON_INVALID' });
  add('empty-file', '', { error: 'JSON_INVALID' });
  add('json-array', '[]', invalid(/JSON object/));
  add('directory', 'dir', { error: 'FILE_READ_FAILED', message: /is a directory/ });
  add('fifo', 'fifo', { error: 'FILE_READ_FAILED', message: /FIFO/ });
  if (full) {
    // Random deletions of top-level and model keys.
    const j0 = llama2();
    for (const k of Object.keys(j0)) mut(`drop-${k}`, (j) => { delete j[k]; }, { cleanErrorOrOk: /./ });
    for (const k of Object.keys(j0.model)) mut(`drop-model.${k}`, (j) => { delete j.model[k]; }, { cleanErrorOrOk: /./ });
  }
  return out;
}

function templateCases(full: boolean): FuzzCase[] {
  const out: FuzzCase[] = [];
  const msgs = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }, { role: 'assistant', content: 'Hi.' }, { role: 'user', content: 'Why?' }];
  const add = (id: string, source: string, expect: Expect, messages: unknown = msgs, timeoutMs?: number, limits?: Record<string, number>) =>
    out.push({ id: `template/${id}`, cls: 'template', op: 'template', args: { source, messages, limits }, expect, timeoutMs });
  const limit = (m: RegExp): Expect => ({ error: 'CHAT_TEMPLATE_LIMIT', message: m });
  add('range-1e8', '{% for i in range(100000000) %}x{% endfor %}', limit(/range\(0, 100000000, 1\)/));
  add('range-1e6-step', '{% for i in range(0, 100000000, 100) %}x{% endfor %}', limit(/1000000 elements/));
  add('nested-loops', '{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}', limit(/nodes|ms/), msgs, 60_000, full ? undefined : { maxSteps: 500_000 });  // CI: a smaller budget, same mechanism
  add('doubling-string', '{% set ns = namespace(s="ab") %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}', limit(/characters/));
  add('recursive-macro', '{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}', { cleanErrorOrOk: /fuzz\.jinja/ });
  add('raise-exception', "{{ raise_exception('no system role') }}", { error: 'CHAT_TEMPLATE_ERROR', message: /no system role/ });
  add('syntax-error', '{% for x in %}', { error: 'CHAT_TEMPLATE_INVALID' });
  add('unclosed', '{% if true %}x', { error: 'CHAT_TEMPLATE_INVALID' });
  add('range-nan', '{% for i in range("x") %}{% endfor %}', { error: '*', message: /range|fuzz\.jinja/ });
  add('range-step-0', '{% for i in range(0, 5, 0) %}{% endfor %}', { error: '*', message: /step/ });
  for (const f of readdirSync(join(FIXTURES, 'chat')).filter((x) => x.endsWith('.jinja'))) {
    const src = readFileSync(join(FIXTURES, 'chat', f), 'utf8');
    add(`${f}/valid`, src, { ok: true }, [{ role: 'user', content: 'Hello' }]);
    add(`${f}/content-number`, src, { cleanErrorOrOk: /fuzz\.jinja/ }, [{ role: 'user', content: 5 }]);
    add(`${f}/no-role`, src, { cleanErrorOrOk: /fuzz\.jinja/ }, [{ content: 'x' }]);
    add(`${f}/messages-string`, src, { cleanErrorOrOk: /fuzz\.jinja/ }, 'hello');
    add(`${f}/huge-content`, src, { ok: true }, [{ role: 'user', content: 'x'.repeat(1_000_000) }]);
  }
  return out;
}

function idCases(): FuzzCase[] {
  const bad: [string, unknown][] = [
    ['2^32+1', [4294967297]], ['2^31', [2 ** 31]], ['vocab', [100]], ['negative', [-1]], ['fraction', [1.5]], ['nan', [NaN]],
    ['infinity', [Infinity]], ['string', ['7']], ['null', [null]], ['object', [{}]], ['bigint-2^40+5', new BigInt64Array([2n ** 40n + 5n])],
    ['bigint-negative', new BigInt64Array([-1n])], ['float64', new Float64Array([2.5])], ['uint32-big', new Uint32Array([4294967295])], ['mixed', [1, '2']],
  ];
  const out: FuzzCase[] = bad.map(([id, ids]) => ({ id: `ids/${id}`, cls: 'ids', op: 'ids', args: { ids, vocab: 100 }, expect: { error: 'E_TOKEN_ID' } }));
  for (const [id, ids] of [['array', [0, 5, 99]], ['int32', new Int32Array([1, 2])], ['bigint', new BigInt64Array([3n])], ['uint8', new Uint8Array([4])]] as const)
    out.push({ id: `ids/valid-${id}`, cls: 'ids', op: 'ids', args: { ids, vocab: 100 }, expect: { ok: true } });
  return out;
}

export function textCases(full: boolean): FuzzCase[] {
  return [...tokenizerCases(full), ...templateCases(full), ...idCases()];
}
