/**
 * Validation of a tokenizer.json before the library builds a tokenizer from it. The library accepts
 * files that then tokenize silently wrong: vocabulary ids that are huge (a sparse array of 10⁹ slots),
 * fractional or strings; an `unk_token` that is not in the vocabulary; an empty vocabulary; a BPE model
 * with neither byte fallback nor an unknown token (text outside the vocabulary vanishes); and
 * pre-tokenizer regexes that hang the backtracking engine (see regex-budget.ts).
 *
 * Returns `maxTokenBytes`, the UTF-8 length of the longest token string: a prompt of B bytes needs at
 * least B / maxTokenBytes tokens, which lets a prompt that cannot fit the context be refused before it
 * is tokenized (a 4 MB prompt took 13 s and 1 GB against a 128-token context).
 */
import { MlxcelError } from '../errors.js';
import { checkPatternBudget } from './regex-budget.js';

/** Far above any released vocabulary (Gemma's 262k is the largest), far below an allocation problem. */
export const MAX_TOKEN_ID = 2 ** 24 - 1;

export interface TokenizerJsonSummary {
  /** Largest UTF-8 byte length of a vocabulary or added-token string (at least 1). */
  maxTokenBytes: number;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const show = (v: unknown) => { const s = JSON.stringify(v); return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 60)}…` : s; };

export function validateTokenizerJson(json: Json, source: string): TokenizerJsonSummary {
  const fail = (msg: string): never => { throw new MlxcelError('TOKENIZER_FILE_INVALID', `${source}: ${msg}`); };
  const checkId = (id: unknown, where: string): number => {
    if (typeof id !== 'number' || !Number.isInteger(id)) fail(`${where} = ${show(id)} is not an integer token id`);
    if ((id as number) < 0 || (id as number) > MAX_TOKEN_ID) fail(`${where} = ${id} is outside [0, ${MAX_TOKEN_ID}]`);
    return id as number;
  };
  let maxBytes = 1;
  const seeToken = (t: string) => { const n = Buffer.byteLength(t, 'utf8'); if (n > maxBytes) maxBytes = n; };

  const model = json.model;
  if (!isObj(model)) return fail('"model" must be an object');
  const type = model.type ?? (Array.isArray(model.vocab) ? 'Unigram' : 'BPE');
  const tokens = new Set<string>();
  if (type === 'Unigram') {
    if (!Array.isArray(model.vocab) || model.vocab.length === 0) fail('model.vocab (Unigram) must be a non-empty list of [piece, score]');
    (model.vocab as unknown[]).forEach((e, i) => {
      if (!Array.isArray(e) || typeof e[0] !== 'string' || typeof e[1] !== 'number' || !Number.isFinite(e[1]))
        fail(`model.vocab[${i}] = ${show(e)} is not [piece, finite score]`);
      tokens.add((e as [string])[0]);
      seeToken((e as [string])[0]);
    });
    if (model.unk_id !== undefined && model.unk_id !== null) {
      const u = checkId(model.unk_id, 'model.unk_id');
      if (u >= (model.vocab as unknown[]).length) fail(`model.unk_id = ${u} is outside the ${(model.vocab as unknown[]).length}-piece vocabulary`);
    }
    if (model.byte_fallback !== true && (model.unk_id === undefined || model.unk_id === null))
      fail('model has neither byte_fallback nor unk_id: text outside the vocabulary would be dropped silently');
  } else if (type === 'BPE' || type === 'WordPiece' || type === 'WordLevel') {
    if (!isObj(model.vocab)) return fail(`model.vocab (${type}) must be an object of token -> id`);
    const entries = Object.entries(model.vocab);
    if (entries.length === 0) fail('model.vocab is empty');
    const ids = new Map<number, string>();
    for (const [tok, id] of entries) {
      const n = checkId(id, `model.vocab[${show(tok)}]`);
      const prev = ids.get(n);
      if (prev !== undefined) fail(`model.vocab gives id ${n} to both ${show(prev)} and ${show(tok)}`);
      ids.set(n, tok);
      tokens.add(tok);
      seeToken(tok);
    }
    const unk = model.unk_token;
    if (unk !== undefined && unk !== null) {
      if (typeof unk !== 'string') fail(`model.unk_token must be a string, got ${show(unk)}`);
      if (!tokens.has(unk as string) && !addedContents(json).has(unk as string)) fail(`model.unk_token ${show(unk)} is not in the vocabulary`);
    }
    if (type === 'BPE' && model.byte_fallback !== true && (unk === undefined || unk === null) && !usesByteLevel(json))
      fail('the BPE model has neither byte_fallback, an unk_token nor a ByteLevel pre-tokenizer: text outside the vocabulary would be dropped silently');
  } else {
    fail(`model.type ${show(type)} is not supported (BPE, Unigram, WordPiece, WordLevel)`);
  }

  const added = json.added_tokens;
  if (added !== undefined && added !== null) {
    if (!Array.isArray(added)) fail('added_tokens must be a list');
    (added as unknown[]).forEach((t, i) => {
      if (!isObj(t)) fail(`added_tokens[${i}] must be an object`);
      checkId((t as Json).id, `added_tokens[${i}].id`);
      if (typeof (t as Json).content !== 'string' || (t as Json).content === '') fail(`added_tokens[${i}].content must be a non-empty string`);
      seeToken((t as Json).content as string);
    });
  }

  for (const key of ['normalizer', 'pre_tokenizer'] as const) walkPatterns(json[key], key, source);
  return { maxTokenBytes: maxBytes };
}

function addedContents(json: Json): Set<string> {
  const out = new Set<string>();
  if (Array.isArray(json.added_tokens)) for (const t of json.added_tokens) if (isObj(t) && typeof t.content === 'string') out.add(t.content);
  return out;
}

/** Byte-level BPE (GPT-2 style) maps every byte to a vocabulary symbol, so it needs no unk/byte fallback. */
function usesByteLevel(json: Json): boolean {
  const has = (v: unknown): boolean => {
    if (Array.isArray(v)) return v.some(has);
    if (!isObj(v)) return false;
    if (v.type === 'ByteLevel') return true;
    return Object.values(v).some(has);
  };
  return has(json.pre_tokenizer) || has(json.decoder);
}

/** Every `pattern: {Regex}` under a normalizer / pre-tokenizer (Sequence members included) is budget-checked. */
function walkPatterns(v: unknown, path: string, source: string): void {
  if (Array.isArray(v)) return v.forEach((x, i) => walkPatterns(x, `${path}[${i}]`, source));
  if (!isObj(v)) return;
  if (isObj(v.pattern) && v.pattern.Regex !== undefined) checkPatternBudget(v.pattern.Regex, `${source}: ${path}.pattern.Regex`);
  for (const [k, x] of Object.entries(v)) if (k !== 'pattern') walkPatterns(x, `${path}.${k}`, source);
}
