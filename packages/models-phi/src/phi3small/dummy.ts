/**
 * The 91 padded-vocabulary ids Phi-3-small must never generate (docs/architecture/phi3small.md §6). The tokenizer's
 * special-token block is the last 96 ids of the padded vocabulary (100256 … 100351 for vocab_size
 * 100352, after the 100256 cl100k ranks); inside it only endoftext (+1), system (+5), user (+6),
 * assistant (+7) and end (+10) are real tokens. The phi3small-tiny fixture (vocab_size 352) uses the
 * same layout at 256 … 351.
 */
const ALLOWED_OFFSETS = new Set([1, 5, 6, 7, 10]);
const BLOCK = 96;

export function dummyTokenIds(vocabSize: number): Int32Array {
  const base = vocabSize - BLOCK;
  const ids: number[] = [];
  for (let o = 0; o < BLOCK; o++) if (!ALLOWED_OFFSETS.has(o)) ids.push(base + o);
  return Int32Array.from(ids);
}
