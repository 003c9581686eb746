/**
 * The prefix pool: blocks shared between sequences through the hash chain, exact restores for every
 * storage kind, copy-on-write of a shared partial block, LRU eviction under the byte budget with
 * pinned chains kept, and the layer-kind gates (a ring restores only its window, or nothing where its
 * rows are gone; KV-shared layers follow their owner).
 *
 * A "sequence" here is a set of layer caches fed rows that depend only on (token, position) — the
 * property real models give (row p depends on tokens 0..p), reduced to what the pool relies on.
 */
import { describe, expect, it } from 'vitest';
import {
  ContiguousCache, KvBufferRecycler, kvBuffers, layerLayout, prefixNamespace, PrefixPool, QuantizedCache, RotatingCache, SharedCache,
  type KvStorage, type LayerCache,
} from '../src/index.js';
import { bitsEqual, randArray, relErr } from './helpers.js';

const H = 2, D = 32, NH = 4;

/** K/V rows of positions [p0, p0 + ids.length): a function of (token, position, layer) only. */
function rows(ids: ArrayLike<number>, p0: number, layer: number): { k: Float32Array; v: Float32Array } {
  const n = ids.length, k = new Float32Array(n * H * D), v = new Float32Array(n * H * D);
  for (let i = 0; i < n; i++) {
    const seed = (ids[i]! * 7919 + (p0 + i) * 104729 + layer * 15485863) >>> 0;
    k.set(randArray(H * D, seed), i * H * D);
    v.set(randArray(H * D, seed ^ 0x5bd1e995), i * H * D);
  }
  return { k, v };
}

type Make = () => LayerCache[];

/** Feeds ids[from, to) to every owning layer, in chunks of `chunk`. */
function feed(caches: LayerCache[], ids: Int32Array, from: number, to: number, chunk = 1 << 30): void {
  for (let p = from; p < to; p += chunk) {
    const e = Math.min(to, p + chunk);
    caches.forEach((c, l) => {
      if (c.kind === 'shared') return;
      const { k, v } = rows(ids.subarray(p, e), p, l);
      c.update(k, v, e - p);
    });
  }
}

const ids = (n: number, seed: number) => Int32Array.from({ length: n }, (_, i) => (i * 31 + seed * 17 + ((i * seed) % 7)) % 500);
const withPrefix = (prefix: Int32Array, tail: Int32Array) => {
  const r = new Int32Array(prefix.length + tail.length);
  r.set(prefix);
  r.set(tail, prefix.length);
  return r;
};

/** Every owning layer's stored rows of positions [from, to) as exact bits. */
function sameRows(a: LayerCache[], b: LayerCache[], from: number, to: number): boolean {
  return a.every((c, l) => {
    if (c.kind === 'shared') return b[l]!.kind === 'shared';
    const x = (c as ContiguousCache).exportPositions(from, to), y = (b[l] as ContiguousCache).exportPositions(from, to);
    return !!x && !!y && bitsEqual(x.k, y.k) && bitsEqual(x.v, y.v) && (!x.kScales || bitsEqual(x.kScales, y.kScales!)) && (!x.vScales || bitsEqual(x.vScales, y.vScales!));
  });
}

/** Attention of a query at position p over each layer (a ring's window for rings and the layers reading one). */
function attendAll(caches: LayerCache[], p: number): Float32Array[] {
  const q = randArray(NH * D, 99 + p);
  const ring = (c: LayerCache) => (c instanceof SharedCache ? c.owner : c);
  return caches.map((c) => {
    const r = ring(c);
    return c.attend(q, 1, NH, Int32Array.of(p), { scale: 0.2, ...(r instanceof RotatingCache ? { window: r.window } : {}) });
  });
}

/** Publishes a sequence's whole prompt (prefilled in `chunk`-token steps, publishing after each when `perChunk`). */
function prefillAndPublish(pool: PrefixPool, ns: string, make: Make, prompt: Int32Array, chunk = 1 << 30, perChunk = true) {
  const caches = make();
  const hit = pool.lookup(ns, prompt, prompt.length - 1, layerLayout(caches));
  pool.restore(hit, caches);
  const track = pool.track(ns, layerLayout(caches), hit);
  for (let p = hit.tokens; p < prompt.length; p += chunk) {
    const e = Math.min(prompt.length, p + chunk);
    feed(caches, prompt, p, e);
    if (perChunk || e === prompt.length) track.publish(prompt, e, caches, e === prompt.length);
  }
  return { caches, hit, track };
}

const full3: Make = () => [new ContiguousCache(H, D), new ContiguousCache(H, D, D, { dtype: 'bf16' }), new QuantizedCache(H, D, D, { vBits: 4, groupSize: 32 })];
const nsOf = (make: Make, regime = 'single') => prefixNamespace({ model: 'test-model', layout: layerLayout(make()), ropeRegime: regime });
const BIG = 1 << 30;

describe('prefix pool: sharing through the hash chain', () => {
  it('a second sequence with the same first tokens restores them bit-exactly and shares the stored blocks', () => {
    const pool = new PrefixPool({ blockSize: 16, budgetBytes: BIG });
    const ns = nsOf(full3);
    const system = ids(40, 1);
    const a = withPrefix(system, ids(60, 2));
    prefillAndPublish(pool, ns, full3, a);
    expect(pool.stats().blocks).toBe(7); // 6 full blocks + the partial tail of 4
    const before = pool.stats().bytes;

    const b = withPrefix(system, ids(30, 3)); // diverges at 40 (and ids(30,3)[0] != ids(60,2)[0])
    expect(b[40]).not.toBe(a[40]);
    const { caches, hit } = prefillAndPublish(pool, ns, full3, b);
    expect([hit.tokens, hit.matched, hit.limitedBy]).toEqual([40, 40, null]);
    // Blocks 0 and 1 are shared (not stored again); B's block 2 differs from A's (positions 32..47).
    const fresh = full3();
    feed(fresh, b, 0, b.length);
    expect(sameRows(caches, fresh, 0, b.length)).toBe(true);
    expect(attendAll(caches, b.length - 1).every((o, l) => bitsEqual(o, attendAll(fresh, b.length - 1)[l]!))).toBe(true);
    expect(pool.stats().blocks).toBe(7 + 3); // its blocks 2, 3 and its partial tail (70 = 4 × 16 + 6)
    expect(pool.stats().bytes).toBeGreaterThan(before);
    expect(pool.stats().restoredTokens).toBe(40);
  });

  it('at least one token is left to compute, and the whole prompt of an earlier request can be matched up to that', () => {
    const pool = new PrefixPool({ blockSize: 16, budgetBytes: BIG });
    const ns = nsOf(full3);
    const a = ids(48, 4);
    prefillAndPublish(pool, ns, full3, a);
    const hit = pool.lookup(ns, a, a.length - 1, layerLayout(full3()));
    expect(hit.tokens).toBe(47);
    expect(pool.lookup(ns, a, 0, layerLayout(full3())).tokens).toBe(0);
  });

  it('other namespaces (storage kind, RoPE regime) never match, and a layout mismatch is refused', () => {
    const pool = new PrefixPool({ blockSize: 16, budgetBytes: BIG });
    const a = ids(40, 5);
    prefillAndPublish(pool, nsOf(full3), full3, a);
    const f16: Make = () => [new ContiguousCache(H, D, D, { dtype: 'f16' }), new ContiguousCache(H, D, D, { dtype: 'bf16' }), new QuantizedCache(H, D, D, { vBits: 4, groupSize: 32 })];
    expect(nsOf(f16)).not.toBe(nsOf(full3));
    expect(pool.lookup(nsOf(f16), a, 39, layerLayout(f16())).tokens).toBe(0);
    expect(pool.lookup(nsOf(full3, 'longrope:long'), a, 39, layerLayout(full3())).tokens).toBe(0);
    expect(() => pool.lookup(nsOf(full3), a, 39, layerLayout(f16()))).toThrow(/layer 0 \(contiguous f16\): its storage is f16, the prefix chain was stored with f32/);
  });

  it('bad options are refused with the option named', () => {
    expect(() => new PrefixPool({ budgetBytes: -1 })).toThrow(/budgetBytes must be a finite number >= 0, got -1/);
    expect(() => new PrefixPool({ budgetBytes: NaN })).toThrow(/budgetBytes/);
    expect(() => new PrefixPool({ budgetBytes: 1, blockSize: 0 })).toThrow(/blockSize must be an integer in 1\.\.4096, got 0/);
  });
});

describe('prefix pool: exact restores for every storage kind', () => {
  for (const storage of ['f32', 'f16', 'bf16', 'q8', 'k8v4'] as KvStorage[])
    it(`${storage}: restored rows are the stored bits, and later rows continue identically`, () => {
      const quant = storage === 'q8' || storage === 'k8v4';
      const make: Make = () => [
        quant ? new QuantizedCache(H, D, D, { vBits: storage === 'q8' ? 8 : 4, groupSize: 32 }) : new ContiguousCache(H, D, D, { dtype: storage as 'f32' }),
        new RotatingCache(H, D, 12, D, { dtype: storage, groupSize: 32 }),
      ];
      const pool = new PrefixPool({ blockSize: 16, budgetBytes: BIG });
      const ns = nsOf(make);
      const system = ids(50, 6);
      prefillAndPublish(pool, ns, make, withPrefix(system, ids(20, 7)), 8);
      const b = withPrefix(system, ids(9, 8));
      const { caches, hit } = prefillAndPublish(pool, ns, make, b, 8);
      expect(hit.tokens).toBe(50);
      const fresh = make();
      feed(fresh, b, 0, b.length, 8);
      // The ring restored only its window: positions 39..49, then went on from there.
      expect(sameRows([caches[0]!], [fresh[0]!], 0, b.length)).toBe(true);
      expect(sameRows([caches[1]!], [fresh[1]!], b.length - 11, b.length)).toBe(true);
      const got = attendAll(caches, b.length - 1), want = attendAll(fresh, b.length - 1);
      got.forEach((o, l) => expect(relErr(o, want[l]!), `layer ${l}`).toBeLessThan(1e-6));
    });
});

describe('prefix pool: copy-on-write of a shared partial block', () => {
  it('a sequence extending an earlier prompt\'s partial tail stores a new block; the shared one is never written', () => {
    const pool = new PrefixPool({ blockSize: 16, budgetBytes: BIG });
    const ns = nsOf(full3);
    const a = ids(40, 9); // blocks [0,16) [16,32) and a partial [32,40)
    prefillAndPublish(pool, ns, full3, a);
    const holdHit = pool.lookup(ns, withPrefix(a, Int32Array.of(1)), 40, layerLayout(full3()));
    expect(holdHit.tokens).toBe(40);
    const tail = holdHit.blocks.at(-1)!;
    expect(tail.tokens.length).toBe(8);
    const tailBits = tail.layers.map((im) => im && { k: im.k.slice(), v: im.v.slice() });

    // B = A + 10 tokens: restores 40 (the partial block, copied), writes 40..49 into its own cache.
    const b = withPrefix(a, ids(10, 10));
    const { caches, hit } = prefillAndPublish(pool, ns, full3, b);
    expect(hit.tokens).toBe(40);
    expect(caches[0]!.offset).toBe(50);
    // The old partial block's rows are untouched (B wrote into its own copy) ...
    tail.layers.forEach((im, l) => {
      expect(bitsEqual(im!.k, tailBits[l]!.k) && bitsEqual(im!.v, tailBits[l]!.v), `layer ${l}`).toBe(true);
    });
    // ... a holder of the old block still restores A's rows from it ...
    const old = full3();
    pool.restore(holdHit, old);
    const freshA = full3();
    feed(freshA, a, 0, 40);
    expect(sameRows(old, freshA, 0, 40)).toBe(true);
    // ... and the pool now serves A's prefix from B's new full block [32, 48), the superseded partial one gone.
    const again = pool.lookup(ns, withPrefix(a, Int32Array.of(1)), 40, layerLayout(full3()));
    expect(again.tokens).toBe(40);
    expect(again.blocks.at(-1)!.tokens.length).toBe(16);
    expect(again.blocks.at(-1)).not.toBe(tail);
    const viaNew = full3();
    pool.restore(again, viaNew);
    expect(sameRows(viaNew, freshA, 0, 40)).toBe(true);
  });
});

describe('prefix pool: LRU eviction under the budget', () => {
  const one: Make = () => [new ContiguousCache(H, D)];
  it('evicts the least recently used unpinned block; pinned chains stay; setBudget shrinks the pool', () => {
    const blockBytes = 16 * H * D * 2 * 4 + 16 * 4 + 16 * 4; // K+V f32, positions, token ids
    const pool = new PrefixPool({ blockSize: 16, budgetBytes: 3 * blockBytes });
    const ns = nsOf(one);
    const [x, y, z, w] = [11, 12, 13, 14].map((s) => ids(16, s));
    const store = (p: Int32Array) => prefillAndPublish(pool, ns, one, p).track.release();
    store(x!);
    store(y!);
    store(z!);
    expect(pool.stats()).toMatchObject({ blocks: 3, bytes: 3 * blockBytes, evictedBlocks: 0 });
    const probe = (p: Int32Array) => pool.lookup(ns, withPrefix(p, Int32Array.of(0)), 16, layerLayout(one())).tokens;
    expect(probe(x!)).toBe(16); // x is now the most recently used
    store(w!); // no room: y (least recently used) goes
    expect(pool.stats().evictedBlocks).toBe(1);
    expect([probe(x!), probe(y!), probe(z!), probe(w!)]).toEqual([16, 0, 16, 16]);

    // A running sequence pins its chain: z is the LRU block now, but pinned, so x goes instead.
    const pinned = pool.track(ns, layerLayout(one()), pool.lookup(ns, withPrefix(z!, Int32Array.of(0)), 16, layerLayout(one())));
    probe(x!);
    probe(w!);
    store(y!);
    expect([probe(z!), probe(y!)]).toEqual([16, 16]);
    pool.setBudget(0);
    expect(pool.stats()).toMatchObject({ blocks: 1, pinnedBytes: blockBytes }); // only the pinned block is left
    pinned.release();
    pool.setBudget(0);
    expect(pool.stats().blocks).toBe(0);
    // Nothing evictable and no room: publishing stores nothing and says so in the counters.
    const refusedBefore = pool.stats().refusedBlocks;
    store(x!);
    expect(pool.stats().blocks).toBe(0);
    expect(pool.stats().refusedBlocks).toBe(refusedBefore + 1);
  });

  it('a chain is evicted from its leaves: a block another block continues is never dropped first', () => {
    const pool = new PrefixPool({ blockSize: 16, budgetBytes: BIG });
    const ns = nsOf(one);
    const a = ids(64, 15);
    prefillAndPublish(pool, ns, one, a).track.release();
    const bytes = pool.stats().bytes;
    pool.setBudget(bytes - 1);
    // The last block went; the first three still serve a 48-token prefix.
    expect(pool.lookup(ns, a, 63, layerLayout(one())).tokens).toBe(48);
  });
});

describe('prefix pool: layer-kind gates', () => {
  const W = 8;
  const mixed: Make = () => {
    const full = new ContiguousCache(H, D), ring = new RotatingCache(H, D, W);
    return [full, ring, new SharedCache(ring), new SharedCache(full)];
  };

  it('a restored ring is the ring a fresh sequence would have; KV-shared layers store nothing and follow their owner', () => {
    const pool = new PrefixPool({ blockSize: 64, budgetBytes: BIG });
    const ns = nsOf(mixed);
    const system = ids(500, 16);
    prefillAndPublish(pool, ns, mixed, withPrefix(system, ids(100, 17)), 4);
    const stored = pool.lookup(ns, system, 500, layerLayout(mixed()));
    expect(stored.blocks.every((b) => b.layers[2] === null && b.layers[3] === null)).toBe(true);
    const b = withPrefix(system, ids(5, 18));
    const { caches, hit } = prefillAndPublish(pool, ns, mixed, b, 4);
    expect(hit.tokens).toBe(500);
    expect(caches.map((c) => c.offset)).toEqual([505, 505, 505, 505]);
    const fresh = mixed();
    feed(fresh, b, 0, b.length, 4);
    const got = attendAll(caches, b.length - 1), want = attendAll(fresh, b.length - 1);
    got.forEach((o, l) => expect(relErr(o, want[l]!), `layer ${l}`).toBeLessThan(1e-6));
    // Where the blocks hold them, the ring gets every position a fresh ring (256 slots here) would still
    // hold, 244..499, position p in slot p mod 256: its tiles, split-K and later writes are a fresh ring's.
    const restoredRing = mixed();
    pool.restore(hit, restoredRing);
    const slots = restoredRing[1]!.slotPositions();
    expect(slots.length).toBe(256);
    for (let p = 244; p < 500; p++) expect(slots[p % 256]).toBe(p);
    const freshAt500 = mixed();
    feed(freshAt500, system, 0, 500, 4);
    expect(bitsEqual(attendAll(restoredRing, 499)[1]!, attendAll(freshAt500, 499)[1]!)).toBe(true);
  });

  it('where a ring had moved past a prefix\'s window when it was stored, reuse stops before it and says which layer and why', () => {
    const pool = new PrefixPool({ blockSize: 64, budgetBytes: BIG });
    const ns = nsOf(mixed);
    const a = ids(600, 19);
    // Published only at the end of the prompt: the ring (256 slots) then holds positions 344..599 only.
    prefillAndPublish(pool, ns, mixed, a, 4, false);
    const layout = layerLayout(mixed());
    // A prefix ending at 500 needs ring rows 493..499: held (block 448..511 was still in the ring).
    const at500 = pool.lookup(ns, withPrefix(a.subarray(0, 500), Int32Array.of(1)), 500, layout);
    expect(at500.tokens).toBe(500);
    // The blocks hold ring rows from 384 on only: the ring gets those, oldest in slot 0 (not a fresh
    // ring's layout, but the same keys: the attention agrees to rounding).
    const windowOnly = mixed();
    pool.restore(at500, windowOnly);
    expect(Array.from(windowOnly[1]!.slotPositions())).toEqual(Array.from({ length: 116 }, (_, i) => 384 + i));
    const fresh = mixed();
    feed(fresh, a, 0, 500, 4);
    attendAll(windowOnly, 499).forEach((o, l) => expect(relErr(o, attendAll(fresh, 499)[l]!), `layer ${l}`).toBeLessThan(1e-6));
    // One ending at 200 needs 193..199, which the ring had overwritten: the gate walks back to 0.
    const hit = pool.lookup(ns, withPrefix(a.subarray(0, 200), Int32Array.of(1)), 200, layout);
    expect(hit.matched).toBe(200);
    expect(hit.tokens).toBe(0);
    expect(hit.limitedBy).toMatch(/layer 1 \(rotating f32, window 8\) needs positions \d+\.\.\d+ to continue at \d+, but its ring had already moved past 0\.\.63 when that block was stored; reuse stops at 0/);
    // A later sequence whose ring does hold those rows fills them in; then the same lookup succeeds.
    prefillAndPublish(pool, ns, mixed, withPrefix(a.subarray(0, 200), ids(10, 20)), 4, true);
    expect(pool.lookup(ns, withPrefix(a.subarray(0, 200), Int32Array.of(1)), 200, layout).tokens).toBe(200);
  });
});

describe('KV buffer recycler', () => {
  it('keeps the buffers of reset caches for new stores of the same size, zeroed, up to its limit', () => {
    const r = new KvBufferRecycler(8 << 20);
    const a = r.u8(2 << 20);
    a.fill(7);
    r.give(a);
    r.give(a); // twice: kept once
    expect(r.heldBytes).toBe(2 << 20);
    const b = r.u8(2 << 20);
    expect(b).toBe(a);
    expect(b.every((x) => x === 0)).toBe(true);
    r.give(new Uint8Array(1000)); // small: left to the garbage collector
    r.give(new Float32Array(3 << 20)); // 12 MiB: over the limit
    expect(r.heldBytes).toBe(0);
    r.give(b);
    r.setLimit(0);
    expect(r.heldBytes).toBe(0);
    expect(() => r.setLimit(-1)).toThrow(/limit must be a finite number >= 0/);
  });

  it('a reset cache gives its storage back to the process recycler, and a new cache of that size reuses it', () => {
    const before = kvBuffers.limitBytes;
    kvBuffers.setLimit(1 << 30);
    try {
      const k = randArray(300 * 8 * 128, 1), v = randArray(300 * 8 * 128, 2), q = randArray(32 * 128, 3);
      const attend = (c: LayerCache) => c.attend(q, 1, 32, Int32Array.of(299), { scale: 0.1 });
      const c = new ContiguousCache(8, 128);
      c.update(k, v, 300); // 512 slots: 2 MiB each for K and V
      const want = attend(c);
      const held = kvBuffers.heldBytes;
      c.reset();
      expect(kvBuffers.heldBytes).toBe(held + 2 * (2 << 20));
      const d = new ContiguousCache(8, 128);
      d.update(k, v, 300);
      expect(kvBuffers.heldBytes).toBeLessThan(held + 2 * (2 << 20)); // it took them
      expect(bitsEqual(attend(d), want)).toBe(true);
      expect(c.offset).toBe(0);
    } finally {
      kvBuffers.setLimit(before);
    }
  });
});
