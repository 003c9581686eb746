/**
 * The vocabulary as bytes, and a trie over those bytes, built once per tokenizer and shared by every
 * constraint on it (WeakMap on the tokenizer).
 *
 * A token's bytes are what it adds to the output when it is not the first token of the text:
 * - SentencePiece vocabularies (Gemma, Llama-2/Phi-3): `▁` is a space, `<0xNN>` is the byte NN
 *   (byte fallback), anything else is its UTF-8;
 * - byte-level BPE (GPT-2 style, Phi-4-mini's o200k): each character stands for one byte through
 *   the GPT-2 byte↔unicode table;
 * - tiktoken (Phi-3-small): the rank's raw bytes.
 * Multi-byte UTF-8 characters split across tokens are fine: the matcher walks bytes.
 * Special tokens (`<bos>`, `<end_of_turn>`, `<|tool_call>`) have no bytes: a grammar reaches them only
 * through a token element, and EOS ids only when the grammar accepts.
 */
import type { Tokenizer } from '../tokenizer/index.js';

export interface Vocabulary {
  /** Number of logits rows the masks cover (≥ tokenizer size; padded embedding rows are never allowed). */
  readonly size: number;
  /** bytes of token id, or null (special / unknown / empty). */
  readonly bytes: readonly (Uint8Array | null)[];
  readonly trie: TokenTrie;
  /** Longest token in bytes. */
  readonly maxTokenBytes: number;
  readonly style: 'sentencepiece' | 'byte-level' | 'tiktoken';
}

/**
 * Trie over token bytes in depth-first order: node n's subtree is the index range
 * [n, subtreeEnd[n]); its first child (if any) is n + 1 and the next sibling of child c is
 * subtreeEnd[c]. The tokens ending at n are `tokens[tokStart[n] .. tokStart[n + 1])`, so every
 * token of a subtree lies in one contiguous range. Node 0 is the root (no byte).
 */
export interface TokenTrie {
  readonly byte: Uint8Array;
  readonly subtreeEnd: Int32Array;
  readonly tokStart: Int32Array;
  readonly tokens: Int32Array;
  readonly nodeCount: number;
}

const cache = new WeakMap<Tokenizer, Map<number, Vocabulary>>();

/** The vocabulary of `tokenizer` for a model with `size` logits (default the tokenizer's size). */
export function vocabularyOf(tokenizer: Tokenizer, size = tokenizer.vocabSize): Vocabulary {
  let bySize = cache.get(tokenizer);
  if (!bySize) cache.set(tokenizer, (bySize = new Map()));
  let v = bySize.get(size);
  if (!v) bySize.set(size, (v = buildVocabulary(tokenizer, size)));
  return v;
}

function buildVocabulary(tok: Tokenizer, size: number): Vocabulary {
  const n = Math.min(size, tok.vocabSize);
  const strings: (string | undefined)[] = new Array(n);
  let spaceMarks = 0, byteLevelMarks = 0;
  for (let id = 0; id < n; id++) {
    const s = tok.idToToken(id);
    strings[id] = s;
    if (s === undefined || tok.specialIds.has(id)) continue;
    if (s.includes('\u2581')) spaceMarks++;
    if (s.includes('\u0120') || s.includes('\u010a')) byteLevelMarks++;
  }
  const style: Vocabulary['style'] = tok.kind === 'tiktoken' ? 'tiktoken' : byteLevelMarks > spaceMarks ? 'byte-level' : 'sentencepiece';
  const unicodeToByte = style === 'byte-level' ? gpt2UnicodeToByte() : null;
  const bytes: (Uint8Array | null)[] = new Array(size).fill(null);
  let maxTokenBytes = 1;
  for (let id = 0; id < n; id++) {
    const s = strings[id];
    if (s === undefined || s === '' || tok.specialIds.has(id)) continue;
    let b: Uint8Array | null;
    if (style === 'byte-level') b = byteLevelBytes(s, unicodeToByte!);
    else if (style === 'tiktoken') b = hexTokenBytes(s) ?? utf8(s);
    else b = sentencePieceBytes(s);
    if (b && b.length) {
      bytes[id] = b;
      if (b.length > maxTokenBytes) maxTokenBytes = b.length;
    }
  }
  return { size, bytes, trie: buildTrie(bytes), maxTokenBytes, style };
}

const enc = new TextEncoder();
const utf8 = (s: string) => enc.encode(s);

function sentencePieceBytes(s: string): Uint8Array {
  const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(s);
  if (m) return Uint8Array.of(parseInt(m[1]!, 16));
  return utf8(s.replaceAll('\u2581', ' '));
}

/** `<0x41><0x42>` (how the tiktoken tokenizer names ranks that are not valid UTF-8). */
function hexTokenBytes(s: string): Uint8Array | null {
  if (!/^(<0x[0-9A-F]{2}>)+$/.test(s)) return null;
  const out = new Uint8Array(s.length / 6);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(i * 6 + 3, i * 6 + 5), 16);
  return out;
}

function byteLevelBytes(s: string, map: Map<number, number>): Uint8Array | null {
  const out: number[] = [];
  for (const ch of s) {
    const b = map.get(ch.codePointAt(0)!);
    if (b === undefined) return utf8(s); // an added plain-text token stored verbatim
    out.push(b);
  }
  return Uint8Array.from(out);
}

/** GPT-2's bytes_to_unicode, inverted. */
function gpt2UnicodeToByte(): Map<number, number> {
  const bs: number[] = [];
  for (let i = 0x21; i <= 0x7e; i++) bs.push(i);
  for (let i = 0xa1; i <= 0xac; i++) bs.push(i);
  for (let i = 0xae; i <= 0xff; i++) bs.push(i);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  const m = new Map<number, number>();
  bs.forEach((b, i) => m.set(cs[i]!, b));
  return m;
}

function buildTrie(bytes: readonly (Uint8Array | null)[]): TokenTrie {
  // Sorted by bytes, tokens sharing a prefix are adjacent: one pass builds the depth-first layout.
  const ids: number[] = [];
  let total = 1;
  for (let i = 0; i < bytes.length; i++) if (bytes[i]) { ids.push(i); total += bytes[i]!.length; }
  // Latin-1 strings compare like their bytes, natively (much faster than a byte-loop comparator).
  const keys: string[] = new Array(bytes.length);
  for (const id of ids) keys[id] = latin1(bytes[id]!);
  ids.sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : a - b));
  const byte = new Uint8Array(total), subtreeEnd = new Int32Array(total), tokStart = new Int32Array(total + 1);
  const tokens = new Int32Array(ids.length);
  let count = 1, nt = 0;
  const path: number[] = [0]; // path[d] = node at depth d
  let prev: Uint8Array = new Uint8Array(0);
  for (const id of ids) {
    const b = bytes[id]!;
    let lcp = 0;
    const n = Math.min(prev.length, b.length);
    while (lcp < n && prev[lcp] === b[lcp]) lcp++;
    // Close the nodes of the previous token below the common prefix.
    while (path.length - 1 > lcp) subtreeEnd[path.pop()!] = count;
    for (let d = lcp; d < b.length; d++) {
      byte[count] = b[d]!;
      tokStart[count] = nt;
      path.push(count++);
    }
    tokens[nt++] = id;
    prev = b;
  }
  while (path.length) subtreeEnd[path.pop()!] = count;
  tokStart[count] = nt;
  return { byte: byte.slice(0, count), subtreeEnd: subtreeEnd.slice(0, count), tokStart: tokStart.slice(0, count + 1), tokens, nodeCount: count };
}

function latin1(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) s += String.fromCharCode(b[i]!);
  return s;
}
