import { MlxcelError } from '../errors.js';

/**
 * Mergeable ranks of a tiktoken vocabulary. Token byte strings are held as "binary
 * strings" (one UTF-16 code unit 0–255 per byte, i.e. latin1) so that a JS `Map`
 * can key them cheaply.
 */
export interface BpeRanks {
  /** byte string → rank (= token id). */
  readonly encoder: ReadonlyMap<string, number>;
  /** rank → byte string; holes where a rank is unused. */
  readonly decoder: ReadonlyArray<string | undefined>;
}

/**
 * Parse a `.tiktoken` ranks file: one token per line, `base64(token bytes) SPACE rank`,
 * blank lines ignored (the format tiktoken's `load_tiktoken_bpe` and Phi-3-small's
 * `_load_tiktoken_bpe` read).
 */
export function parseTiktokenRanks(text: string, source = 'ranks file'): BpeRanks {
  const encoder = new Map<string, number>();
  const decoder: Array<string | undefined> = [];
  let lineNo = 0;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    lineNo++;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line.length === 0) continue;
    const space = line.indexOf(' ');
    const b64 = space < 0 ? '' : line.slice(0, space);
    const rankText = space < 0 ? '' : line.slice(space + 1).trim();
    if (space <= 0 || !/^[A-Za-z0-9+/]+=*$/.test(b64) || !/^\d+$/.test(rankText)) {
      throw new MlxcelError('TOKENIZER_FILE_INVALID', `${source} line ${lineNo}: expected "<base64 token> <rank>", got ${JSON.stringify(line.slice(0, 80))}`);
    }
    const bytes = Buffer.from(b64, 'base64').toString('latin1');
    const rank = Number(rankText);
    if (bytes.length === 0) {
      throw new MlxcelError('TOKENIZER_FILE_INVALID', `${source} line ${lineNo}: empty token`);
    }
    if (encoder.has(bytes)) {
      throw new MlxcelError('TOKENIZER_FILE_INVALID', `${source} line ${lineNo}: duplicate token (rank ${rank} and ${encoder.get(bytes)})`);
    }
    if (decoder[rank] !== undefined) {
      throw new MlxcelError('TOKENIZER_FILE_INVALID', `${source} line ${lineNo}: rank ${rank} used twice`);
    }
    encoder.set(bytes, rank);
    decoder[rank] = bytes;
  }
  if (encoder.size === 0) throw new MlxcelError('TOKENIZER_FILE_INVALID', `${source} holds no tokens`);
  return { encoder, decoder };
}

/**
 * Byte-level BPE of one pre-tokenized piece, exactly as tiktoken's `byte_pair_merge`:
 * start from single bytes and repeatedly merge the adjacent pair whose concatenation has
 * the lowest rank, leftmost first on ties, until no adjacent pair is a token.
 *
 * tiktoken scans all pairs per merge (O(n²)); this uses a binary heap keyed by
 * (rank, start) with lazy invalidation, which makes the same choice at every step
 * (the heap minimum among *current* pairs is the lowest rank, leftmost on ties) in
 * O(n log n), so long pieces (runs of spaces, minified code) stay fast.
 *
 * @param piece the piece's UTF-8 bytes as a binary string
 * @param out   ids are appended here
 */
export function bytePairEncode(piece: string, ranks: ReadonlyMap<string, number>, out: number[]): void {
  const whole = ranks.get(piece);
  if (whole !== undefined) {
    out.push(whole);
    return;
  }
  const n = piece.length;
  if (n === 1) throw unknownByte(piece);
  // Node i is the part that starts at byte i; merging absorbs the right neighbour, so a
  // node's start never moves. next[i] = start of the following part (n = none).
  const next = new Int32Array(n);
  const prev = new Int32Array(n);
  const alive = new Uint8Array(n).fill(1);
  for (let i = 0; i < n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
  }
  const heap = new MinHeap();
  const SHIFT = 4294967296; // 2^32: key = rank * 2^32 + start, exact in a double
  const pairRank = (i: number): number | undefined => {
    const j = next[i]!;
    if (j >= n) return undefined;
    return ranks.get(piece.slice(i, next[j]!));
  };
  for (let i = 0; i + 1 < n; i++) {
    const r = pairRank(i);
    if (r !== undefined) heap.push(r * SHIFT + i);
  }
  while (heap.size > 0) {
    const key = heap.pop();
    const rank = Math.floor(key / SHIFT);
    const i = key - rank * SHIFT;
    // Stale entry? Valid only if node i is alive and its current pair has this rank.
    if (!alive[i] || pairRank(i) !== rank) continue;
    const j = next[i]!;
    alive[j] = 0;
    const k = next[j]!;
    next[i] = k;
    if (k < n) prev[k] = i;
    const r = pairRank(i);
    if (r !== undefined) heap.push(r * SHIFT + i);
    const p = prev[i]!;
    if (p >= 0) {
      const rp = pairRank(p);
      if (rp !== undefined) heap.push(rp * SHIFT + p);
    }
  }
  for (let i = 0; i < n; i = next[i]!) {
    const id = ranks.get(piece.slice(i, next[i]!));
    if (id === undefined) throw unknownByte(piece.slice(i, next[i]!));
    out.push(id);
  }
}

function unknownByte(bytes: string): MlxcelError {
  const hex = Array.from(bytes, (c) => c.charCodeAt(0).toString(16).padStart(2, '0')).join(' ');
  return new MlxcelError('TOKENIZER_FILE_INVALID', `tiktoken ranks have no token for bytes [${hex}] (every single byte must be a token)`);
}

/** A binary min-heap of non-negative numbers. */
class MinHeap {
  private data: number[] = [];

  get size(): number {
    return this.data.length;
  }

  push(v: number): void {
    const d = this.data;
    let i = d.length;
    d.push(v);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (d[parent]! <= v) break;
      d[i] = d[parent]!;
      i = parent;
    }
    d[i] = v;
  }

  pop(): number {
    const d = this.data;
    const top = d[0]!;
    const last = d.pop()!;
    const n = d.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && d[r]! < d[l]! ? r : l;
        if (d[c]! >= last) break;
        d[i] = d[c]!;
        i = c;
      }
      d[i] = last;
    }
    return top;
  }
}
