/**
 * Prefix reuse across requests: a pool of fixed-size blocks of KV rows (every owning layer's rows
 * for `blockSize` consecutive positions), identified by a hash chain over the token ids, shared by
 * every sequence whose prompt starts with the same tokens, evicted least-recently-used under a byte
 * budget.
 *
 * Why the rows of a prefix can be reused at all: with causal attention the K/V a layer writes at
 * position p depend only on tokens 0..p (and on the model, the KV storage kind and the RoPE table
 * the keys were rotated with, which the namespace of a chain covers). So the first n rows of any
 * sequence whose first n tokens match are the same rows, whatever came after them.
 *
 * How sequences get them: by copy. Native attention reads one sequence's rows from that sequence's
 * own stores, so a new sequence's caches are filled from the blocks at admission (`restore`, exact
 * bits: a memcpy per layer, far cheaper than prefill), and the blocks stay in the pool, never written
 * by a sequence. A sequence that extends a shared partial block (the tail of an earlier prompt)
 * publishes a new block holding the old rows and its own (copy-on-write) and never touches the old
 * one. The memory cost of the copy: every running sequence holds its own copy of its prefix, and the
 * pool holds one more.
 *
 * Layer kinds:
 * - append-only layers (contiguous, quantized) need every row 0..n-1;
 * - sliding-window layers (rings) need only the rows their window still sees from position n on:
 *   n − window + 1 .. n − 1. A block keeps a ring layer's rows only if the ring still held them when
 *   the block was published; a hit is cut back to the longest prefix whose windows are complete,
 *   and `PrefixHit.limitedBy` says which layer cut it and why;
 * - KV-shared layers (Gemma 3n / Gemma 4) store nothing: they read their owner layer, which is
 *   restored.
 * Quantized storage (q8, k8v4) is reused like any other: a row's codes and scales depend on that row
 * alone, so a restored row is bit-identical to the row a fresh prefill would quantize.
 */
import { createHash } from 'node:crypto';
import { MlxcelError } from '@mlxcel/tensor';
import { KvCacheBase, type RestoreOptions } from './base.js';
import { ringRestoreStart, RotatingCache } from './rotating.js';
import { sourceOf } from './state.js';
import { imageBytes, type StoreImage } from './store.js';
import type { LayerCache } from './types.js';

/** What a layer is, as far as reusing its rows goes: rows only move between layers described alike. */
export interface LayerLayout {
  kind: LayerCache['kind'];
  storage: string;
  kBits: number;
  vBits: number;
  groupSize: number;
  nKvHeads: number;
  headDim: number;
  vDim: number;
  /** Sliding window of a ring; 0 otherwise. */
  window: number;
  /** The layer whose rows this layer reads (itself when it owns its cache). */
  source: number;
}

function fail(msg: string): never {
  throw new MlxcelError('E_PREFIX', msg);
}

/** The layout of one sequence's layer caches; throws for a cache kind the pool cannot copy rows of. */
export function layerLayout(caches: readonly LayerCache[]): LayerLayout[] {
  return caches.map((c, l) => {
    const source = sourceOf(caches, l);
    if (c.kind !== 'shared' && !(c instanceof KvCacheBase)) fail(`layer ${l}: a ${c.kind} cache that is not one of @mlxcel/cache's own cannot be restored from a prefix pool`);
    const f = c instanceof KvCacheBase ? c.format : null;
    return {
      kind: c.kind, storage: c.storage, kBits: f?.kBits ?? 0, vBits: f?.vBits ?? 0, groupSize: f?.groupSize ?? 0,
      nKvHeads: c.nKvHeads, headDim: c.headDim, vDim: c.vDim, window: c instanceof RotatingCache ? c.window : 0, source,
    };
  });
}

/**
 * The namespace of a chain: a hash of everything besides the token ids that decides a prefix's rows —
 * the model (id and config hash), every layer's cache layout (kind, KV storage kind and bits, geometry,
 * window, source) and the RoPE regime the keys are rotated with.
 */
export function prefixNamespace(parts: { model: string; layout: readonly LayerLayout[]; ropeRegime: string }): string {
  return createHash('sha256').update(JSON.stringify([parts.model, parts.layout, parts.ropeRegime])).digest('hex');
}

/** Hash of a block: its parent's hash (or the namespace) chained with its token ids. */
function blockHash(parent: string, tokens: Int32Array): string {
  return createHash('sha256').update(parent).update(new Uint8Array(tokens.buffer, tokens.byteOffset, tokens.byteLength)).digest('hex');
}

/** One block (read-only outside the pool): rows of positions start .. start + tokens.length − 1 for every owning layer. */
export interface PrefixBlock {
  readonly id: number;
  readonly hash: string;
  readonly parent: PrefixBlock | null;
  readonly ns: string;
  readonly start: number;
  readonly tokens: Int32Array;
  /** Per layer: its rows, or null (a KV-shared layer; a ring layer whose ring no longer held them). */
  readonly layers: (StoreImage | null)[];
  bytes: number;
  /** Sequences pinning this block (their chain runs through it): never evicted while > 0. */
  refs: number;
  readonly kids: Set<PrefixBlock>;
  lastUse: number;
}

/** A chain's root: the namespace, its layout and its first blocks. */
export interface PrefixRoot {
  readonly ns: string;
  readonly layout: readonly LayerLayout[];
  readonly kids: Set<PrefixBlock>;
}

export interface PrefixPoolOptions {
  /** Token positions per block (default 64). */
  blockSize?: number;
  /** Bytes of KV rows the pool may hold; least-recently-used unpinned blocks are evicted beyond it. */
  budgetBytes: number;
}

/** The result of a lookup: how many prompt tokens can be restored, and from which blocks. */
export interface PrefixHit {
  readonly ns: string;
  /** Tokens whose rows can be restored (0 = none). */
  readonly tokens: number;
  /** Tokens the chain matched before the layer gates. */
  readonly matched: number;
  /** Why `tokens` < `matched` (the window layer that cut the hit back), or null. */
  readonly limitedBy: string | null;
  /** @internal blocks covering [0, tokens) in order; the last may be used in part. */
  readonly blocks: readonly PrefixBlock[];
}

export interface PrefixPoolStats {
  blocks: number;
  bytes: number;
  pinnedBytes: number;
  budgetBytes: number;
  lookups: number;
  /** Restores of at least one token. */
  restores: number;
  /** Tokens restored in all. */
  restoredTokens: number;
  evictedBlocks: number;
  /** Blocks not stored for lack of room (everything else pinned). */
  refusedBlocks: number;
}

export class PrefixPool {
  readonly blockSize: number;
  private budget: number;
  private readonly roots = new Map<string, PrefixRoot>();
  /** Full blocks by chain hash. */
  private readonly full = new Map<string, PrefixBlock>();
  /** Every stored block (full and partial), for eviction. */
  private readonly all = new Set<PrefixBlock>();
  private clock = 0;
  private nextId = 1;
  private _bytes = 0;
  private counters = { lookups: 0, restores: 0, restoredTokens: 0, evictedBlocks: 0, refusedBlocks: 0 };

  constructor(opts: PrefixPoolOptions) {
    const b = opts.blockSize ?? 64;
    if (!Number.isInteger(b) || b < 1 || b > 4096) fail(`prefix pool: blockSize must be an integer in 1..4096, got ${String(opts.blockSize)}`);
    this.blockSize = b;
    this.budget = checkBudget(opts.budgetBytes);
  }

  get bytes(): number {
    return this._bytes;
  }
  get budgetBytes(): number {
    return this.budget;
  }

  /** Changes the budget; evicts least-recently-used unpinned blocks until the pool fits (or only pinned ones are left). */
  setBudget(bytes: number): void {
    this.budget = checkBudget(bytes);
    this.evictFor(0);
  }

  stats(): PrefixPoolStats {
    let pinned = 0;
    for (const b of this.all) if (b.refs > 0) pinned += b.bytes;
    return { blocks: this.all.size, bytes: this._bytes, pinnedBytes: pinned, budgetBytes: this.budget, ...this.counters };
  }

  /**
   * The longest stored prefix of `ids[0, limit)` in namespace `ns` whose rows every layer of `layout`
   * can be restored from (see the file comment for the layer gates), its length a multiple of `align`.
   */
  lookup(ns: string, ids: Int32Array, limit: number, layout: readonly LayerLayout[], align = 1): PrefixHit {
    if (!Number.isInteger(align) || align < 1) fail(`lookup: align must be a positive integer, got ${String(align)}`);
    this.counters.lookups++;
    const none = (matched = 0, why: string | null = null): PrefixHit => ({ ns, tokens: 0, matched, limitedBy: why, blocks: [] });
    const root = this.roots.get(ns);
    limit = Math.min(limit, ids.length);
    if (!root || limit <= 0) return none();
    checkLayout(root.layout, layout);
    const B = this.blockSize;
    const blocks: PrefixBlock[] = [];
    let parentHash = ns, kids = root.kids, covered = 0;
    while (covered + B <= limit) {
      const tokens = ids.subarray(covered, covered + B);
      const h = blockHash(parentHash, tokens);
      const b = this.full.get(h);
      if (!b || !sameTokens(b.tokens, tokens)) break;
      blocks.push(b);
      covered += B;
      parentHash = h;
      kids = b.kids;
    }
    // The next block may match in part: rows of a prefix of any block are that prefix's rows.
    // Among equally long matches, the one with more layers' rows (a ring's window may be missing in one).
    let best: PrefixBlock | null = null, bestLen = 0;
    const held = (b: PrefixBlock) => b.layers.reduce((s, im) => s + (im ? 1 : 0), 0);
    for (const k of kids) {
      const j = commonPrefix(k.tokens, ids, covered, limit);
      if (j > bestLen || (j === bestLen && j > 0 && held(k) > held(best!))) {
        best = k;
        bestLen = j;
      }
    }
    if (best) blocks.push(best);
    const matched = covered + bestLen;
    const { tokens, why } = gate(blocks, matched, layout, align);
    const used = blocks.filter((b) => b.start < tokens);
    if (tokens === 0) return none(matched, why);
    this.touch(used);
    return { ns, tokens, matched, limitedBy: why, blocks: used };
  }

  /**
   * Copies the hit's rows into a sequence's fresh caches (exact bits; KV-shared layers follow their
   * owner). A ring gets what a fresh ring of this prompt would hold where the blocks have it (then it
   * is that ring, slot for slot: `opts.firstChunk` sizes it), else its window. The caches must have
   * the layout the hit was looked up with.
   */
  restore(hit: PrefixHit, caches: readonly LayerCache[], opts: RestoreOptions = {}): void {
    if (hit.tokens === 0) return;
    const root = this.roots.get(hit.ns);
    if (!root) fail('restore: the hit\'s namespace is no longer in the pool (restore right after lookup)');
    checkLayout(root.layout, layerLayout(caches));
    const n = hit.tokens;
    caches.forEach((c, l) => {
      if (c.kind === 'shared') return;
      const cache = c as KvCacheBase;
      const { from, need } = cache.restoreRange(n, opts);
      const images: StoreImage[] = [];
      for (const b of hit.blocks) {
        if (b.start + b.tokens.length <= from || b.start >= n) continue;
        const im = b.layers[l];
        if (im) images.push(im);
        else if (b.start + b.tokens.length > need)
          fail(`restore: layer ${l} has no rows for positions ${b.start}..${b.start + b.tokens.length - 1} (block ${b.id} changed since the lookup)`);
      }
      cache.restoreRows(images, n, opts);
    });
    this.counters.restores++;
    this.counters.restoredTokens += n;
  }

  /**
   * A sequence's handle for publishing its rows as it prefills: pins the full blocks of `hit` (its
   * chain runs through them) until `release`.
   */
  track(ns: string, layout: readonly LayerLayout[], hit?: PrefixHit): PrefixTrack {
    return new PrefixTrack(this, ns, layout, hit);
  }

  // ---- internal (PrefixTrack) --------------------------------------------------------------------

  /** @internal */
  rootFor(ns: string, layout: readonly LayerLayout[]): PrefixRoot {
    let r = this.roots.get(ns);
    if (!r) this.roots.set(ns, (r = { ns, layout: layout.map((x) => ({ ...x })), kids: new Set() }));
    else checkLayout(r.layout, layout);
    return r;
  }

  /** @internal the full block after `parent` holding `tokens`, if stored */
  fullBlock(parentHash: string, tokens: Int32Array): { hash: string; block: PrefixBlock | null } {
    const hash = blockHash(parentHash, tokens);
    const b = this.full.get(hash);
    return { hash, block: b && sameTokens(b.tokens, tokens) ? b : null };
  }

  /** @internal stores a block copied from `caches` (null: no room) */
  addBlock(root: PrefixRoot, parent: PrefixBlock | null, hash: string, start: number, tokens: Int32Array, caches: readonly LayerCache[]): PrefixBlock | null {
    const layers = caches.map((c) => (c.kind === 'shared' ? null : (c as KvCacheBase).exportPositions(start, start + tokens.length)));
    const bytes = layers.reduce((s, im) => s + (im ? imageBytes(im) : 0), tokens.byteLength);
    if (!this.evictFor(bytes)) {
      this.counters.refusedBlocks++;
      return null;
    }
    const b: PrefixBlock = {
      id: this.nextId++, hash, parent, ns: root.ns, start, tokens: tokens.slice(), layers, bytes, refs: 0, kids: new Set(), lastUse: ++this.clock,
    };
    (parent ? parent.kids : root.kids).add(b);
    if (tokens.length === this.blockSize) this.full.set(hash, b);
    this.all.add(b);
    this._bytes += bytes;
    return b;
  }

  /** @internal fills the layers a stored block lacks (ring rows it was published without) from `caches` */
  fillMissing(b: PrefixBlock, caches: readonly LayerCache[]): void {
    caches.forEach((c, l) => {
      if (b.layers[l] || c.kind === 'shared') return;
      const im = (c as KvCacheBase).exportPositions(b.start, b.start + b.tokens.length);
      if (!im) return;
      const bytes = imageBytes(im);
      b.refs++; // not itself a candidate while room is made for it
      const ok = this.evictFor(bytes);
      b.refs--;
      if (!ok) return;
      b.layers[l] = im;
      b.bytes += bytes;
      this._bytes += bytes;
    });
  }

  /** @internal */
  touch(blocks: readonly PrefixBlock[]): void {
    const t = ++this.clock;
    for (const b of blocks) b.lastUse = t;
  }

  /** @internal drops a block that nothing pins and nothing continues (a superseded partial block) */
  drop(b: PrefixBlock): void {
    if (b.refs > 0 || b.kids.size > 0 || !this.all.has(b)) return;
    this.remove(b);
  }

  /**
   * Evicts least-recently-used blocks that nothing pins and no other block continues, until `bytes`
   * more fit in the budget. False when they cannot be made to fit.
   */
  private evictFor(bytes: number): boolean {
    while (this._bytes + bytes > this.budget) {
      let victim: PrefixBlock | null = null;
      for (const b of this.all)
        if (b.refs === 0 && b.kids.size === 0 && (!victim || b.lastUse < victim.lastUse || (b.lastUse === victim.lastUse && b.start > victim.start))) victim = b;
      if (!victim) return false;
      this.remove(victim);
      this.counters.evictedBlocks++;
    }
    return true;
  }

  private remove(b: PrefixBlock): void {
    this.all.delete(b);
    if (this.full.get(b.hash) === b) this.full.delete(b.hash);
    const root = this.roots.get(b.ns);
    (b.parent ? b.parent.kids : root?.kids)?.delete(b); // roots stay: tiny, one per namespace
    this._bytes -= b.bytes;
  }
}

/**
 * One sequence's side of the pool: `publish` stores the blocks its prefill has completed (full blocks
 * as they fill, the partial tail at the end of the prompt), continuing the chain of its hit, and pins
 * the chain so that it stays continuable; `release` unpins it when the sequence ends.
 */
export class PrefixTrack {
  private readonly root: PrefixRoot;
  /** The last full block of the chain so far (null = at the root). */
  private parent: PrefixBlock | null = null;
  private parentHash: string;
  /** Positions the chain covers with full blocks. */
  private covered = 0;
  private readonly pinned: PrefixBlock[] = [];
  private released = false;

  constructor(private readonly pool: PrefixPool, readonly ns: string, layout: readonly LayerLayout[], hit?: PrefixHit) {
    this.root = pool.rootFor(ns, layout);
    this.parentHash = ns;
    if (hit && hit.ns !== ns) fail('track: the hit belongs to another namespace');
    for (const b of hit?.blocks ?? []) {
      if (b.tokens.length !== pool.blockSize || b.start + b.tokens.length > hit!.tokens) break;
      this.advance(b);
    }
  }

  /** Positions covered by the full blocks of this sequence's chain. */
  get chainTokens(): number {
    return this.covered;
  }

  /**
   * Stores the blocks of ids[0, upto) not yet in the pool, copying their rows from `caches` (the
   * sequence's caches, holding at least those positions). `final`: the prompt ends at `upto`, so its
   * partial last block is stored too. Stops quietly when the budget has no room left.
   */
  publish(ids: Int32Array, upto: number, caches: readonly LayerCache[], final: boolean): void {
    if (this.released) fail('publish: the track was released');
    checkLayout(this.root.layout, layerLayout(caches));
    const B = this.pool.blockSize;
    while (this.covered + B <= upto) {
      const tokens = ids.subarray(this.covered, this.covered + B);
      const { hash, block } = this.pool.fullBlock(this.parentHash, tokens);
      let b = block;
      if (b) this.pool.fillMissing(b, caches);
      else {
        // A partial block this one extends is superseded (copy-on-write: a new block, the old untouched).
        const superseded = [...(this.parent ? this.parent.kids : this.root.kids)].filter((k) => k.tokens.length < B && commonPrefix(k.tokens, ids, this.covered, upto) === k.tokens.length);
        b = this.pool.addBlock(this.root, this.parent, hash, this.covered, tokens, caches);
        if (!b) return;
        for (const k of superseded) this.pool.drop(k);
      }
      this.pool.touch([b]);
      this.advance(b);
    }
    const m = upto - this.covered;
    if (!final || m <= 0) return;
    const tail = ids.subarray(this.covered, upto);
    const kids = [...(this.parent ? this.parent.kids : this.root.kids)];
    const holder = kids.find((k) => k.tokens.length >= m && commonPrefix(k.tokens, ids, this.covered, upto) === m);
    if (holder) {
      this.pool.fillMissing(holder, caches);
      this.pool.touch([holder]);
      return;
    }
    const superseded = kids.filter((k) => k.tokens.length < m && commonPrefix(k.tokens, ids, this.covered, upto) === k.tokens.length);
    const b = this.pool.addBlock(this.root, this.parent, blockHash(this.parentHash, tail) + `:${m}`, this.covered, tail, caches);
    if (b) for (const k of superseded) this.pool.drop(k);
  }

  /** Unpins the chain (the sequence ended). */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const b of this.pinned) b.refs--;
    this.pinned.length = 0;
  }

  private advance(b: PrefixBlock): void {
    b.refs++;
    this.pinned.push(b);
    this.parent = b;
    this.parentHash = b.hash;
    this.covered = b.start + b.tokens.length;
  }
}

function checkBudget(bytes: number): number {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes) || bytes < 0) fail(`prefix pool: budgetBytes must be a finite number >= 0, got ${String(bytes)}`);
  return Math.floor(bytes);
}

function sameTokens(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** How many of `block`'s tokens equal ids[from, limit) from the start. */
function commonPrefix(block: Int32Array, ids: Int32Array, from: number, limit: number): number {
  const n = Math.min(block.length, limit - from);
  let j = 0;
  while (j < n && block[j] === ids[from + j]) j++;
  return j;
}

function describeLayer(l: number, x: LayerLayout): string {
  return `layer ${l} (${x.kind} ${x.storage}${x.window ? `, window ${x.window}` : ''})`;
}

function checkLayout(want: readonly LayerLayout[], got: readonly LayerLayout[]): void {
  if (want.length !== got.length) fail(`the caches have ${got.length} layers, the prefix chain was stored for ${want.length}`);
  want.forEach((w, l) => {
    const g = got[l]!;
    for (const k of Object.keys(w) as (keyof LayerLayout)[])
      if (w[k] !== g[k]) fail(`${describeLayer(l, g)}: its ${k} is ${String(g[k])}, the prefix chain was stored with ${String(w[k])}`);
  });
}

/**
 * The layer gates: the longest n ≤ matched, a multiple of `align`, such that every owning layer has the
 * rows it needs to be restored at offset n — append-only layers all of 0..n-1, rings their window
 * (from `ringRestoreStart`).
 */
function gate(blocks: readonly PrefixBlock[], matched: number, layout: readonly LayerLayout[], align: number): { tokens: number; why: string | null } {
  const down = (x: number) => Math.floor(x / align) * align;
  let n = down(matched);
  let why: string | null = null;
  for (let changed = true; changed && n > 0; ) {
    changed = false;
    for (let l = 0; l < layout.length && !changed; l++) {
      const x = layout[l]!;
      if (x.source !== l) continue; // KV-shared: follows its owner
      const from = x.window ? ringRestoreStart(n, x.window) : 0;
      for (const b of blocks) {
        if (b.start >= n || b.start + b.tokens.length <= from || b.layers[l]) continue;
        const cut = down(b.start);
        why = x.window
          ? `${describeLayer(l, x)} needs positions ${from}..${n - 1} to continue at ${n}, but its ring had already moved past ` +
            `${b.start}..${b.start + b.tokens.length - 1} when that block was stored; reuse stops at ${cut}`
          : `${describeLayer(l, x)} has no rows for positions ${b.start}..${b.start + b.tokens.length - 1}; reuse stops at ${cut}`;
        n = cut;
        changed = true;
        break;
      }
    }
  }
  return { tokens: n, why };
}
