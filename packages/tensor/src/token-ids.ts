/**
 * The one token-id validator. Every path that turns caller-supplied ids into an Int32Array (CLI
 * `--ids`, the library's `generate`/`forward`, `trace`, the server) goes through `toTokenIds`, so an id
 * is refused by name instead of being wrapped by `Int32Array.from` (4294967297 → 1, 2⁴⁰+5 → 5,
 * 3.7 → 3, NaN or "12" → 0) and then passing the vocabulary check as a different token.
 */
import { MlxcelError } from './errors.js';

/** Accepted shapes of an id list: a number array, any typed array, or a BigInt64/BigUint64 array. */
export type TokenIdsInput = ArrayLike<number> | ArrayLike<bigint> | Iterable<number>;

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'bigint') return `${v}n`;
  if (v === null || typeof v !== 'object') return String(v);
  return Array.isArray(v) ? 'an array' : 'an object';
}

/**
 * Validates `ids` and returns them as an Int32Array (the input itself when it already is one and every
 * id is in range). `vocabSize` bounds the ids when given (ids must be in [0, vocabSize)); without it
 * they must fit int32 and be >= 0. `where` names the field in messages ("--ids", "prompt", "batch[0].ids").
 * Throws MlxcelError E_TOKEN_ID naming the first bad element.
 */
export function toTokenIds(ids: unknown, where: string, vocabSize?: number): Int32Array {
  const limit = vocabSize ?? 2 ** 31;
  const range = vocabSize === undefined ? '[0, 2^31)' : `the vocabulary [0, ${vocabSize})`;
  if (ids === null || typeof ids !== 'object' || typeof (ids as { length?: unknown }).length !== 'number') {
    if (ids !== null && typeof ids === 'object' && Symbol.iterator in ids) return toTokenIds([...(ids as Iterable<unknown>)], where, vocabSize);
    throw new MlxcelError('E_TOKEN_ID', `${where} must be a list of token ids, got ${describe(ids)}`);
  }
  if (ids instanceof Int32Array) {
    for (let i = 0; i < ids.length; i++)
      if (ids[i]! < 0 || ids[i]! >= limit) throw new MlxcelError('E_TOKEN_ID', `${where}[${i}] = ${ids[i]} is outside ${range}`);
    return ids;
  }
  const src = ids as ArrayLike<unknown>;
  const out = new Int32Array(src.length);
  for (let i = 0; i < src.length; i++) {
    const v = src[i];
    let n: number;
    if (typeof v === 'bigint') {
      // I64 ids (safetensors input_ids, BigInt64Array): compared as bigints so 2^40 + 5 is not read as 5.
      if (v < 0n || v >= BigInt(limit)) throw new MlxcelError('E_TOKEN_ID', `${where}[${i}] = ${v} is outside ${range}`);
      n = Number(v);
    } else if (typeof v === 'number') {
      if (!Number.isInteger(v)) throw new MlxcelError('E_TOKEN_ID', `${where}[${i}] = ${describe(v)} is not an integer token id`);
      if (v < 0 || v >= limit) throw new MlxcelError('E_TOKEN_ID', `${where}[${i}] = ${v} is outside ${range}`);
      n = v;
    } else {
      throw new MlxcelError('E_TOKEN_ID', `${where}[${i}] = ${describe(v)} is not a token id (expected an integer)`);
    }
    out[i] = n;
  }
  return out;
}
