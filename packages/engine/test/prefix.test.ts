// Prefix reuse across requests on the real fixture models (Phi-3 LongRoPE, Gemma 3n with rings and
// KV-shared layers, Gemma 4): the logits after a restored prefix equal a fresh prefill's at the
// prompt's end and over a greedy continuation, for float and quantized KV — identical, not merely
// within the 1e-5 contract, since the rest of the prompt runs the very calls a fresh prefill runs;
// the RoPE regime keys the chain; the scheduler skips the shared prefill, reports cachedTokens, and
// admits by KV budget.
import { join } from 'node:path';
import type { ForwardInput, ForwardOptions, LanguageModel, SequenceState } from '@mlxcel/tensor';
import { describe, expect, it } from 'vitest';
import { BatchScheduler } from '../src/batch.js';
import { generate } from '../src/generate.js';
import { loadModelFromDir, type LoadedModel } from '../src/load.js';
import { layerLayout, prefixNamespace } from '@mlxcel/cache';
import { PrefixCache, prefixIneligible } from '../src/prefix.js';
import { decodeOne, PromptPrefill } from '../src/session.js';
import { FIXTURES } from './helpers/paths.js';

const load = (name: string): LoadedModel => loadModelFromDir(join(FIXTURES, name), { tokenizer: 'none' });

const tokens = (n: number, seed: number, vocab: number) => Int32Array.from({ length: n }, (_, i) => (i * 37 + seed * 101 + ((i * seed) % 11)) % vocab);
const cat = (a: Int32Array, b: Int32Array) => {
  const r = new Int32Array(a.length + b.length);
  r.set(a);
  r.set(b, a.length);
  return r;
};

/** What a second prompt of `length` tokens sharing `shared` with a stored one restores: down to the prefill grid, the last token left. */
const expectedReuse = (shared: number, length: number, chunk: number) => Math.floor(Math.min(shared, length - 1) / chunk) * chunk;

function maxAbs(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/**
 * One prompt as the scheduler runs it: restore what the cache holds, prefill the rest in `chunk`-token
 * steps (the cache's grid) publishing after each, then `decode` greedy steps. Returns the logits of the last prompt row and
 * of every decode step.
 */
function run(model: LanguageModel, cache: PrefixCache | null, ids: Int32Array, opts: { chunk: number; kvCache?: string; decode?: number }) {
  const state = model.newState({ kvCache: opts.kvCache });
  const use = cache?.begin(state, ids, {}) ?? { track: null, cachedTokens: 0, note: null };
  const prefill = new PromptPrefill(model, state, ids, { chunk: opts.chunk });
  if (use.cachedTokens) prefill.skip(use.cachedTokens);
  let logits = new Float32Array(0);
  while (!prefill.finished) {
    logits = prefill.next().slice();
    use.track?.publish(ids, prefill.done, (state as unknown as { caches: never[] }).caches, prefill.finished);
  }
  const steps = [logits];
  for (let i = 0; i < (opts.decode ?? 0); i++) {
    let best = 0;
    for (let v = 1; v < logits.length; v++) if (logits[v]! > logits[best]!) best = v;
    logits = decodeOne(model, state, best).slice();
    steps.push(logits);
  }
  use.track?.release();
  return { steps, cached: use.cachedTokens, note: use.note, state };
}

/** Reuse vs fresh for a second prompt sharing `shared` tokens with the first. */
function compare(loaded: LoadedModel, o: { shared: number; first: number; second: number; chunk: number; kvCache?: string; block?: number }) {
  const m = loaded.model;
  const system = tokens(o.shared, 1, m.vocabSize);
  const a = cat(system, tokens(o.first, 2, m.vocabSize)), b = cat(system, tokens(o.second, 3, m.vocabSize));
  const cache = new PrefixCache(loaded, 1 << 30, o.block ?? 16, o.chunk);
  run(m, cache, a, o);
  const reused = run(m, cache, b, { ...o, decode: 4 });
  const fresh = run(m, null, b, { ...o, decode: 4 });
  const diff = Math.max(...reused.steps.map((s, i) => maxAbs(s, fresh.steps[i]!)));
  return { cached: reused.cached, want: expectedReuse(o.shared, b.length, o.chunk), note: reused.note, diff, cache, a, b };
}

describe('prefix reuse: logits after a restored prefix equal a fresh prefill', () => {
  const cases: [string, string, { chunk: number; kvCache?: string }][] = [
    ['Phi-3 (LongRoPE, prompts on the long table)', 'phi3-tiny-short', { chunk: 16 }],
    ['Gemma 3n (rings of window 8, KV-shared layers)', 'gemma3n-tiny', { chunk: 32 }],
    ['Gemma 3n, prefill chunks of 8', 'gemma3n-tiny', { chunk: 8 }],
    ['Gemma 4 dense', 'gemma4-tiny-dense', { chunk: 32 }],
    ['Gemma 3n, q8 KV', 'gemma3n-tiny', { chunk: 32, kvCache: 'q8' }],
    ['Gemma 4, k8v4 KV', 'gemma4-tiny-dense', { chunk: 32, kvCache: 'k8v4' }],
    ['Phi-3, bf16 KV', 'phi3-tiny-short', { chunk: 16, kvCache: 'bf16' }],
  ];
  for (const [name, dir, o] of cases)
    it(name, () => {
      const loaded = load(dir);
      const r = compare(loaded, { shared: 70, first: 20, second: 9, ...o });
      expect(r.want).toBe(64);
      expect(r.cached, String(r.note)).toBe(r.want);
      expect(r.diff).toBe(0);
    });

  it('Phi-3 LongRoPE: the regime keys the chain (keys rotated by the long table are never given to a short-table prompt)', () => {
    const loaded = load('phi3-tiny-long'); // original_max_position_embeddings 32: prompts past 32 tokens use the long table
    const long = compare(loaded, { shared: 40, first: 12, second: 8, chunk: 16 }); // 52 and 48 tokens: both long
    expect(long.cached).toBe(32);
    expect(long.diff).toBe(0);
    // The same first tokens in a prompt short enough for the short table live in another namespace.
    const s = loaded.model.newState() as unknown as { caches: never[]; keyRegime(n: number): string };
    expect(s.keyRegime(28)).toMatch(/^longrope:short:/);
    expect(s.keyRegime(48)).toMatch(/^longrope:long:/);
    const layout = layerLayout(s.caches);
    const model = `${loaded.dir}|`; // PrefixCache's own id is private; any fixed id shows the regime splits namespaces
    expect(prefixNamespace({ model, layout, ropeRegime: s.keyRegime(28) })).not.toBe(prefixNamespace({ model, layout, ropeRegime: s.keyRegime(48) }));
    const pool = long.cache.pool;
    expect(pool.stats().blocks).toBeGreaterThan(0);
    const ns = (n: number) => (long.cache as unknown as { namespace(st: unknown, n: number): { ns: string } }).namespace(s, n).ns;
    expect(pool.lookup(ns(48), long.b, 47, layout).tokens).toBeGreaterThanOrEqual(40);
    expect(pool.lookup(ns(28), long.b, 47, layout).tokens).toBe(0);
  });

  it('Gemma 3n rings: a 300-token prefix fed in chunks of 4 (the 256-slot ring wraps) restores the ring exactly', () => {
    // Published after every chunk, each block keeps its ring rows; the restore copies only the last window − 1.
    const loaded = load('gemma3n-tiny');
    const r = compare(loaded, { shared: 300, first: 10, second: 6, chunk: 4, block: 64 });
    expect(r.cached).toBe(300);
    expect(r.diff).toBe(0);
  });

  it('a restored state forks (the server\'s n choices) and its forks continue exactly like it', () => {
    for (const dir of ['gemma3n-tiny', 'phi3-tiny-short']) {
      const loaded = load(dir);
      const m = loaded.model;
      const r = compare(loaded, { shared: 70, first: 20, second: 9, chunk: 16 });
      const state = m.newState();
      const use = r.cache.begin(state, r.b, {});
      expect(use.cachedTokens).toBe(64);
      const p = new PromptPrefill(m, state, r.b, { chunk: 16 });
      p.skip(use.cachedTokens);
      p.runAll();
      const fork = state.fork!();
      const a = decodeOne(m, state, 5), b = decodeOne(m, fork, 5);
      expect(maxAbs(a, b), dir).toBe(0);
    }
  });

  it('requests that cannot take part say why', () => {
    const loaded = load('gemma3n-tiny');
    const s = loaded.model.newState();
    expect(prefixIneligible(s, { embeddingOverrides: { rows: Int32Array.of(0), values: new Float32Array(64) } })).toMatch(/soft tokens/);
    expect(prefixIneligible(s, { prefillChunk: 64 })).toMatch(/sets its own prefillChunk/);
    loaded.model.forward([{ ids: Int32Array.of(1, 2), state: s }]);
    expect(prefixIneligible(s, {})).toMatch(/already holds tokens/);
    expect(prefixIneligible({ offset: 0, nbytes: 0, trim: () => 0 } as SequenceState, {})).toMatch(/does not offer prefix reuse/);
  });
});

/** Records the rows of every forward pass. */
function counting(loaded: LoadedModel) {
  const rows: number[] = [], batch: number[] = [];
  const model = loaded.model;
  const forward = model.forward.bind(model);
  model.forward = (b: ForwardInput[], o?: ForwardOptions) => {
    rows.push(b.reduce((s, x) => s + x.ids.length, 0));
    batch.push(b.length);
    return forward(b, o);
  };
  return { rows, batch };
}

async function drain(g: AsyncIterable<{ token: number }> & { stats: Promise<{ cachedTokens: number; promptTokens: number }> }) {
  const toks: number[] = [];
  for await (const t of g) if (t.token >= 0) toks.push(t.token);
  return { toks, stats: await g.stats };
}

describe('BatchScheduler with the prefix cache', () => {
  it('a second request with the same system prompt prefills only its own tokens, and gets what generate() gives it alone', async () => {
    const loaded = load('phi3-tiny-short');
    const m = loaded.model;
    const system = tokens(100, 4, m.vocabSize);
    const p1 = cat(system, tokens(12, 5, m.vocabSize)), p2 = cat(system, tokens(7, 6, m.vocabSize));
    const want2 = await drain(generate(loaded, p2, { maxTokens: 6, temperature: 0 }));
    const sched = new BatchScheduler(loaded, { prefixCache: { blockSize: 16, chunk: 32 } });
    const seen = counting(loaded);
    const r1 = await drain(sched.submit(p1, { maxTokens: 6, temperature: 0 }));
    const fed = seen.rows.length;
    const r2 = await drain(sched.submit(p2, { maxTokens: 6, temperature: 0 }));
    expect(r1.stats.cachedTokens).toBe(0);
    expect(r2.stats.cachedTokens).toBe(96); // the shared 100, down to the prefill grid of 32
    expect(r2.stats.promptTokens).toBe(107);
    expect(seen.rows[fed]).toBe(11); // only the uncached suffix went through the model
    expect(r2.toks).toEqual(want2.toks);
    expect(sched.prefixStats()).toMatchObject({ restores: 1, restoredTokens: 96 });
    // The same prompt again: all of it down to the grid (106 → 96).
    const r3 = await drain(sched.submit(p2, { maxTokens: 6, temperature: 0 }));
    expect(r3.stats.cachedTokens).toBe(96);
    expect(r3.toks).toEqual(want2.toks);
  });

  it('prefixCache: false prefills everything', async () => {
    const loaded = load('phi3-tiny-short');
    const p = tokens(40, 7, loaded.model.vocabSize);
    const sched = new BatchScheduler(loaded, { prefixCache: false });
    await drain(sched.submit(p, { maxTokens: 2 }));
    expect((await drain(sched.submit(p, { maxTokens: 2 }))).stats.cachedTokens).toBe(0);
    expect(sched.prefixStats()).toBeNull();
  });

  it('admits by KV budget: what does not fit next to the running requests waits; what exceeds the whole budget fails clearly', async () => {
    const loaded = load('phi3-tiny-short');
    const m = loaded.model;
    // One request of 20 + 10 tokens needs 256 slots per layer (caches grow in 256-slot steps).
    const perRequest = 3 * 256 * 2 * 2 * 32 * 4; // layers × slots × K,V × KV heads × head dim × f32 = 0.375 MiB
    const prompts = [1, 2, 3].map((s) => tokens(20, s, m.vocabSize));
    for (const [budget, widest] of [[perRequest, 1], [2 * perRequest, 2], [100 * perRequest, 3]] as const) {
      const sched = new BatchScheduler(loaded, { kvBudgetBytes: budget, maxBatch: 8, prefixCache: false });
      const seen = counting(loaded);
      const outs = await Promise.all(prompts.map((p) => drain(sched.submit(p, { maxTokens: 10, temperature: 0 }))));
      expect(outs.every((o) => o.toks.length === 10)).toBe(true);
      expect(Math.max(...seen.batch), `budget ${budget}`).toBe(widest);
    }
    const small = new BatchScheduler(loaded, { kvBudgetBytes: perRequest - 1 });
    await expect(drain(small.submit(prompts[0]!, { maxTokens: 10 }))).rejects.toThrow(
      /the request needs about 0\.4 MiB of KV cache \(20 prompt tokens \+ 10 to generate\), more than the whole KV budget of 0\.4 MiB \(--kv-budget\)/,
    );
    expect(() => new BatchScheduler(loaded, { kvBudgetBytes: 0 })).toThrow(/kvBudgetBytes must be a positive number of bytes, got 0/);
    expect(() => new BatchScheduler(loaded, { prefixCache: { blockSize: 0 } })).toThrow(/blockSize must be an integer in 1\.\.4096, got 0/);
  });
});
