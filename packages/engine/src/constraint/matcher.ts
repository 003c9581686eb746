/**
 * The grammar matcher: a nondeterministic pushdown automaton over bytes, and the per-step
 * vocabulary mask built from it.
 *
 * State: a set of threads. A thread is a stack of grammar positions (hash-consed linked frames:
 * node = (position, parent node)) whose top is a terminal — a byte, a code-point class (with the
 * UTF-8 bytes of a partly read character) or a special token — or the empty stack (ACCEPT: the
 * grammar has matched). Referencing a rule pushes the position after the reference (skipped when
 * that is the end of the alternative: tail calls keep right recursion flat) and one thread per
 * alternative.
 *
 * Mask: walking the whole vocabulary trie for every step would cost a full pass over ~1M trie nodes
 * at a 262k vocabulary. Instead each thread is cut to its top `CACHE_DEPTH` frames above a BOTTOM
 * sentinel and that cut stack is walked once over the trie: tokens consumed entirely inside it are
 * accepted whatever lies below (context-independent), tokens that run past its bottom are
 * "uncertain". The result is cached by the cut stack's positions (per grammar; per vocabulary for
 * positions in a shared prelude such as the JSON value rules), so a step costs an OR of cached bit
 * rows plus a full-stack walk of the few uncertain tokens (in a JSON string: those with a `"` and
 * more after it).
 *
 * Budget: `minCompletion()` is the fewest bytes that can still complete the grammar (every byte has
 * a token of its own in the supported vocabularies, so also an upper bound on the tokens needed).
 * `closing` masks allow only tokens on a shortest completion path, so a caller can always finish
 * inside its token budget.
 */
import { BYTE, CLASS, END, type Grammar, REF, TOKEN, classHas, classHasIn } from './grammar.js';
import type { Vocabulary } from './vocab.js';

const ACCEPT = 0, BOTTOM = 1;
/** Frames of a thread that key the mask cache. */
const CACHE_DEPTH = 3;
/** part = (cp << 4) | (len << 2) | need for a character read partly; 0 otherwise. */
const PART_SHIFT = 33554432; // 2^25

export interface MaskEntry {
  /** Tokens accepted whatever lies below the cut stack. */
  accept: Uint32Array;
  /** Tokens that need the full stack to decide. */
  uncertain: Int32Array;
}

/** Caches shared between requests: per grammar, and per vocabulary + prelude tag. */
export interface MaskCaches {
  grammar: Map<string, MaskEntry>;
  shared: Map<string, MaskEntry> | null;
}

/**
 * Most entries a cache keeps (least recently used go first): an entry holds a bit per vocabulary id
 * (32 KiB at 262k), and a grammar with long bounded repetitions has one key per position.
 */
export const MASK_CACHE_ENTRIES = 512;

function cacheGet(cache: Map<string, MaskEntry>, key: string): MaskEntry | undefined {
  const e = cache.get(key);
  if (e) { cache.delete(key); cache.set(key, e); }
  return e;
}

function cachePut(cache: Map<string, MaskEntry>, key: string, e: MaskEntry): void {
  cache.set(key, e);
  if (cache.size > MASK_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
}

const sharedCaches = new WeakMap<Vocabulary, Map<string, Map<string, MaskEntry>>>();
export function sharedMaskCache(vocab: Vocabulary, tag: string): Map<string, MaskEntry> | null {
  if (!tag) return null;
  let byTag = sharedCaches.get(vocab);
  if (!byTag) sharedCaches.set(vocab, (byTag = new Map()));
  let m = byTag.get(tag);
  if (!m) byTag.set(tag, (m = new Map()));
  return m;
}

class ThreadSet {
  nodes: number[] = [];
  parts: number[] = [];
  /** Dedup index, built only once the set grows (most sets hold 1–3 threads). */
  private keys: Set<number> | null = null;
  /** A thread reached the cut stack's BOTTOM (only in cached walks). */
  bottom = false;
  /** Memoized byte transitions of this (interned) set: byte → next set. */
  next: Map<number, ThreadSet> | null = null;
  /** Memoized shortest completion (−1: not computed). */
  min = -1;

  add(node: number, part: number): void {
    if (node === BOTTOM) { this.bottom = true; return; }
    const n = this.nodes.length;
    if (this.keys) {
      const key = node * PART_SHIFT + part;
      if (this.keys.has(key)) return;
      this.keys.add(key);
    } else {
      for (let i = 0; i < n; i++) if (this.nodes[i] === node && this.parts[i] === part) return;
      if (n >= 8) {
        this.keys = new Set();
        for (let i = 0; i < n; i++) this.keys.add(this.nodes[i]! * PART_SHIFT + this.parts[i]!);
        this.keys.add(node * PART_SHIFT + part);
      }
    }
    this.nodes.push(node);
    this.parts.push(part);
  }

  get size(): number {
    return this.nodes.length;
  }

  hasAccept(): boolean {
    return this.nodes.includes(ACCEPT);
  }
}

/** One request's matcher state over a compiled grammar. */
export class GrammarMatcher {
  private nodePos: Int32Array = new Int32Array(1024);
  private nodeParent: Int32Array = new Int32Array(1024);
  private nodeMin: Int32Array = new Int32Array(1024);
  private nodeCount = 2;
  private readonly intern = new Map<number, number>();
  private readonly posMul: number;
  private threads: ThreadSet;
  private readonly expanding = new Set<number>();
  /** Interned thread sets (so byte transitions can be memoized per set). */
  private readonly sets = new Map<string, ThreadSet>();
  private readonly words: number;

  constructor(
    readonly grammar: Grammar,
    readonly vocab: Vocabulary,
    private readonly caches: MaskCaches,
    private readonly eosIds: readonly number[],
  ) {
    this.posMul = grammar.kind.length + 1;
    this.nodePos[ACCEPT] = -1; this.nodePos[BOTTOM] = -1;
    this.words = Math.ceil(vocab.size / 32);
    this.threads = new ThreadSet();
    for (const start of grammar.ruleAlts[grammar.root]!) this.expand(this.node(start, ACCEPT), this.threads);
    this.expanding.clear();
    this.threads = this.internSet(this.threads);
  }

  /** The grammar has matched a complete sentence (EOS may follow). */
  get canEnd(): boolean {
    return this.threads.hasAccept();
  }

  /** Only EOS can follow (no thread can consume more). */
  get mustEnd(): boolean {
    return this.threads.size === 1 && this.threads.nodes[0] === ACCEPT;
  }

  /** The matcher accepts nothing any more (a rejected token was forced in). */
  get dead(): boolean {
    return this.threads.size === 0;
  }

  /** Fewest bytes (special tokens: 1) that complete the grammar from here. */
  minCompletion(): number {
    return this.minOf(this.threads);
  }

  /** Advances by a token; returns false (state unchanged) when the grammar does not allow it. */
  accept(token: number): boolean {
    if (this.eosIds.includes(token)) return this.canEnd;
    const next = this.afterToken(this.threads, token);
    if (!next || next.size === 0) return false;
    this.threads = next;
    return true;
  }

  /** Whether `token` is allowed and leaves at most `maxBytes` bytes of shortest completion. */
  fits(token: number, maxBytes: number): boolean {
    if (this.eosIds.includes(token)) return this.canEnd;
    const next = this.afterToken(this.threads, token);
    return next !== null && next.size > 0 && this.minOf(next) <= maxBytes;
  }

  /**
   * Fills `out` (⌈V/32⌉ words, bit t = token t allowed). `closing`: only tokens on a shortest
   * completion path (each consumed byte brings the end one byte closer), for the end of a budget.
   */
  fillMask(out: Uint32Array, closing = false): void {
    out.fill(0);
    const th = this.threads;
    if (th.hasAccept()) for (const e of this.eosIds) if (e < this.vocab.size) out[e >>> 5]! |= 1 << (e & 31);
    if (closing) return this.fillClosing(out);
    let pending: Int32Array[] | null = null;
    for (let i = 0; i < th.size; i++) {
      const node = th.nodes[i]!, part = th.parts[i]!;
      if (node === ACCEPT) continue;
      const pos = this.nodePos[node]!;
      if (this.grammar.kind[pos] === TOKEN) {
        const id = this.grammar.arg[pos]!;
        if (id < this.vocab.size) out[id >>> 5]! |= 1 << (id & 31);
        continue;
      }
      const entry = this.entryFor(node, part);
      const a = entry.accept;
      for (let w = 0; w < a.length; w++) out[w]! |= a[w]!;
      if (entry.uncertain.length) (pending ??= []).push(entry.uncertain);
    }
    if (pending) {
      for (const list of pending) {
        for (let j = 0; j < list.length; j++) {
          const t = list[j]!;
          if (out[t >>> 5]! & (1 << (t & 31))) continue;
          const next = this.afterBytes(th, this.vocab.bytes[t]!);
          if (next.size > 0) out[t >>> 5]! |= 1 << (t & 31);
        }
      }
    }
  }

  // ---------------------------------------------------------------- stacks

  private node(pos: number, parent: number): number {
    const key = parent * this.posMul + (pos + 2);
    let id = this.intern.get(key);
    if (id !== undefined) return id;
    id = this.nodeCount++;
    if (id >= this.nodePos.length) {
      const grow = (a: Int32Array) => { const b = new Int32Array(a.length * 2); b.set(a); return b; };
      this.nodePos = grow(this.nodePos); this.nodeParent = grow(this.nodeParent); this.nodeMin = grow(this.nodeMin);
    }
    this.nodePos[id] = pos;
    this.nodeParent[id] = parent;
    this.nodeMin[id] = -1;
    this.intern.set(key, id);
    return id;
  }

  /** The node after the top element of `node` was matched (tail call: END pops straight away). */
  private advanced(node: number): number {
    const pos = this.nodePos[node]! + 1;
    return this.grammar.kind[pos] === END ? this.nodeParent[node]! : this.node(pos, this.nodeParent[node]!);
  }

  /** Adds the terminal-topped threads `node` stands for to `out`. */
  private expand(node: number, out: ThreadSet): void {
    if (node <= BOTTOM) { out.add(node, 0); return; }
    const g = this.grammar;
    const pos = this.nodePos[node]!;
    const k = g.kind[pos]!;
    if (k === BYTE || k === CLASS || k === TOKEN) { out.add(node, 0); return; }
    if (k === END) { this.expand(this.nodeParent[node]!, out); return; }
    // REF: each alternative of the rule, returning to the element after the reference.
    if (this.expanding.has(node)) return;
    this.expanding.add(node);
    const cont = g.kind[pos + 1] === END ? this.nodeParent[node]! : this.node(pos + 1, this.nodeParent[node]!);
    for (const start of g.ruleAlts[g.arg[pos]!]!) this.expand(this.node(start, cont), out);
  }

  /** The canonical instance of a set (same threads ⇒ same object). */
  private internSet(set: ThreadSet): ThreadSet {
    const keys: number[] = [];
    for (let i = 0; i < set.size; i++) keys.push(set.nodes[i]! * PART_SHIFT + set.parts[i]!);
    keys.sort((a, b) => a - b);
    const key = keys.join(',') + (set.bottom ? 'B' : '');
    const hit = this.sets.get(key);
    if (hit) return hit;
    this.sets.set(key, set);
    return set;
  }

  /** The set after one byte (memoized per interned set). */
  private advanceByte(set: ThreadSet, byte: number): ThreadSet {
    const memo = set.next?.get(byte);
    if (memo) return memo;
    const out = this.internSet(this.stepByte(set, byte));
    (set.next ??= new Map()).set(byte, out);
    return out;
  }

  private stepByte(set: ThreadSet, byte: number): ThreadSet {
    const out = new ThreadSet();
    const g = this.grammar;
    for (let i = 0; i < set.size; i++) {
      const node = set.nodes[i]!;
      if (node === ACCEPT) continue;
      const pos = this.nodePos[node]!;
      const k = g.kind[pos];
      if (k === BYTE) {
        if (g.arg[pos] === byte) this.expand(this.advanced(node), out);
      } else if (k === CLASS) {
        const cls = g.classes[g.arg[pos]!]!;
        const part = set.parts[i]!;
        if (part === 0) {
          if (byte < 0x80) {
            if (cls.ascii[byte]) this.expand(this.advanced(node), out);
            continue;
          }
          let len: number, cp: number;
          if (byte >= 0xc2 && byte <= 0xdf) { len = 2; cp = byte & 0x1f; }
          else if (byte >= 0xe0 && byte <= 0xef) { len = 3; cp = byte & 0x0f; }
          else if (byte >= 0xf0 && byte <= 0xf4) { len = 4; cp = byte & 0x07; }
          else continue;
          const need = len - 1;
          if (!this.canComplete(cls, cp, len, need)) continue;
          out.add(node, (cp << 4) | ((len & 3) << 2) | need);
        } else {
          if ((byte & 0xc0) !== 0x80) continue;
          const len = (part >> 2) & 3 || 4, need = (part & 3) - 1;
          const cp = ((part >> 4) << 6) | (byte & 0x3f);
          if (need > 0) {
            if (!this.canComplete(cls, cp, len, need)) continue;
            out.add(node, (cp << 4) | ((len & 3) << 2) | need);
            continue;
          }
          // Complete: reject overlong forms and surrogates, then test the class.
          const minCp = len === 2 ? 0x80 : len === 3 ? 0x800 : 0x10000;
          if (cp < minCp || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) continue;
          if (classHas(cls, cp)) this.expand(this.advanced(node), out);
        }
      }
      // TOKEN elements never match bytes.
    }
    this.expanding.clear();
    return out;
  }

  /**
   * Whether a character whose leading bits are `cp` (with `need` continuation bytes to come, `len`
   * bytes in all) can still be a valid code point in the class: [lo, hi] is clamped to the code
   * points that length can encode without an overlong form.
   */
  private canComplete(cls: Pick<Grammar['classes'][number], 'ranges' | 'neg'>, cp: number, len: number, need: number): boolean {
    let lo = cp * 2 ** (6 * need);
    let hi = lo + 2 ** (6 * need) - 1;
    const minCp = len === 2 ? 0x80 : len === 3 ? 0x800 : 0x10000;
    const maxCp = len === 2 ? 0x7ff : len === 3 ? 0xffff : 0x10ffff;
    if (lo < minCp) lo = minCp;
    if (hi > maxCp) hi = maxCp;
    if (lo > hi) return false;
    // Surrogates are not characters: a 3-byte range inside D800–DFFF cannot complete.
    if (len === 3 && lo >= 0xd800 && hi <= 0xdfff) return false;
    return classHasIn(cls, lo, hi);
  }

  private afterBytes(set: ThreadSet, bytes: Uint8Array): ThreadSet {
    let cur = set;
    for (let i = 0; i < bytes.length && cur.size > 0; i++) cur = this.advanceByte(cur, bytes[i]!);
    return cur;
  }

  /** The state after `token` (special tokens through TOKEN elements), or null when it has no bytes. */
  private afterToken(set: ThreadSet, token: number): ThreadSet | null {
    if (this.grammar.tokenIds.has(token)) {
      const out = new ThreadSet();
      for (let i = 0; i < set.size; i++) {
        const node = set.nodes[i]!;
        if (node === ACCEPT) continue;
        const pos = this.nodePos[node]!;
        if (this.grammar.kind[pos] === TOKEN && this.grammar.arg[pos] === token) this.expand(this.advanced(node), out);
      }
      this.expanding.clear();
      if (out.size > 0 || !this.vocab.bytes[token]) return this.internSet(out);
    }
    const b = token >= 0 && token < this.vocab.size ? this.vocab.bytes[token] : null;
    if (!b) return null;
    return this.afterBytes(set, b);
  }

  // ---------------------------------------------------------------- budget

  private nodeMinimum(node: number): number {
    if (node <= BOTTOM) return 0;
    const m = this.nodeMin[node]!;
    if (m >= 0) return m;
    const v = this.grammar.minRest[this.nodePos[node]!]! + this.nodeMinimum(this.nodeParent[node]!);
    this.nodeMin[node] = v;
    return v;
  }

  private minOf(set: ThreadSet): number {
    if (set.min >= 0) return set.min;
    let best = Infinity;
    for (let i = 0; i < set.size; i++) {
      const node = set.nodes[i]!, part = set.parts[i]!;
      let v: number;
      if (node === ACCEPT) v = 0;
      else if (part === 0) v = this.nodeMinimum(node);
      else {
        // need more continuation bytes, then the rest after the class element.
        const pos = this.nodePos[node]!;
        v = (part & 3) + this.grammar.minRest[pos + 1]! + this.nodeMinimum(this.nodeParent[node]!);
      }
      if (v < best) best = v;
    }
    if (best !== Infinity) set.min = best;
    return best;
  }

  private fillClosing(out: Uint32Array): void {
    const th = this.threads;
    const mc = this.minOf(th);
    const trie = this.vocab.trie;
    const g = this.grammar;
    // Special tokens named by the grammar, when they step along a shortest path.
    for (let i = 0; i < th.size; i++) {
      const node = th.nodes[i]!;
      if (node === ACCEPT) continue;
      const pos = this.nodePos[node]!;
      if (g.kind[pos] === TOKEN) {
        const id = g.arg[pos]!;
        const next = this.afterToken(th, id);
        if (next && next.size && this.minOf(next) <= mc - 1 && id < this.vocab.size) out[id >>> 5]! |= 1 << (id & 31);
      }
    }
    const walk = (tn: number, set: ThreadSet, depth: number): void => {
      const end = trie.subtreeEnd[tn]!;
      for (let c = tn + 1; c < end; c = trie.subtreeEnd[c]!) {
        const next = this.advanceByte(set, trie.byte[c]!);
        if (next.size === 0 || this.minOf(next) > mc - depth - 1) continue;
        for (let j = trie.tokStart[c]!; j < trie.tokStart[c + 1]!; j++) { const t = trie.tokens[j]!; out[t >>> 5]! |= 1 << (t & 31); }
        walk(c, next, depth + 1);
      }
    };
    walk(0, th, 0);
  }

  // ---------------------------------------------------------------- cached masks

  private entryFor(node: number, part: number): MaskEntry {
    // Key: the top frames' positions (and the partial character), cut at CACHE_DEPTH.
    let key = `${part}`;
    let shared = this.grammar.sharedPositions > 0;
    const frames: number[] = [];
    let n = node;
    for (let d = 0; d < CACHE_DEPTH && n > BOTTOM; d++) {
      const p = this.nodePos[n]!;
      frames.push(p);
      if (p >= this.grammar.sharedPositions) shared = false;
      key += `,${p}`;
      n = this.nodeParent[n]!;
    }
    key += n === ACCEPT ? ',A' : n === BOTTOM ? ',B' : ',_';
    const cache = shared && this.caches.shared ? this.caches.shared : this.caches.grammar;
    let e = cacheGet(cache, key);
    if (!e) {
      // Rebuild the cut stack above BOTTOM (or ACCEPT when the real stack ends within the cut).
      let cut = n === ACCEPT ? ACCEPT : BOTTOM;
      for (let d = frames.length - 1; d >= 0; d--) cut = this.node(frames[d]!, cut);
      e = this.walkCut(cut, part);
      cachePut(cache, key, e);
    }
    return e;
  }

  private walkCut(cut: number, part: number): MaskEntry {
    const accept = new Uint32Array(this.words);
    const uncertain: number[] = [];
    const trie = this.vocab.trie;
    let start = new ThreadSet();
    start.add(cut, part);
    start = this.internSet(start);
    const mark = (c: number, ok: boolean) => {
      for (let j = trie.tokStart[c]!; j < trie.tokStart[c + 1]!; j++) {
        const t = trie.tokens[j]!;
        if (ok) accept[t >>> 5]! |= 1 << (t & 31);
        else uncertain.push(t);
      }
    };
    /** Every token strictly below trie node c is uncertain. */
    const allBelow = (c: number) => {
      for (let j = trie.tokStart[c + 1]!; j < trie.tokStart[trie.subtreeEnd[c]!]!; j++) uncertain.push(trie.tokens[j]!);
    };
    const empty = new ThreadSet();
    const walk = (tn: number, set: ThreadSet, needsContext: boolean): void => {
      const end = trie.subtreeEnd[tn]!;
      const unsure = needsContext || set.bottom;
      for (let c = tn + 1; c < end; c = trie.subtreeEnd[c]!) {
        const next = set.size ? this.advanceByte(set, trie.byte[c]!) : empty;
        const alive = next.size > 0 || next.bottom;
        if (alive) mark(c, true);
        else if (unsure) mark(c, false);
        if (alive) walk(c, next, unsure);
        else if (unsure) allBelow(c);
      }
    };
    walk(0, start, false);
    return { accept, uncertain: Int32Array.from(uncertain) };
  }
}
