/**
 * Continuous batching: many generations over one model, decoded together. Every scheduler step runs
 * one prefill chunk of the oldest request still reading its prompt, then ONE batched forward pass with
 * the next token of every sequence that is decoding, so each weight is streamed from memory once per
 * step for all of them (decode is bound by memory bandwidth: a batch of 4 costs about what 1 costs).
 * Requests join and leave between steps; each keeps its own KV state, sampler, stop strings and token
 * budget (TokenEmitter), so a request's tokens are the ones generate() would give it alone.
 *
 *
 * Admission is by KV memory: a request is admitted when the KV bytes it will need (its prompt plus
 * its token budget, in its cache kinds) fit in the KV budget next to those of the running ones, and
 * at most `maxBatch` run at once. The prefix cache (prefix.ts) lives in what the running sequences
 * leave of the budget: a request whose prompt starts like an earlier one's gets those rows restored
 * and prefills only the rest.
 *
 *   const scheduler = new BatchScheduler(loaded, { maxBatch: 8 });
 *   for await (const t of scheduler.submit('Hi', { maxTokens: 64 })) process.stdout.write(t.text);
 */
import { freemem } from 'node:os';
import { kvBuffers, kvBytesFor, type PrefixPoolStats, type PrefixTrack } from '@mlxcel/cache';
import { asPrefixReusable } from '@mlxcel/models-core';
import { persistentFloats } from '@mlxcel/tensor';
import { MlxcelError } from './errors.js';
import type { LoadedModel } from './load.js';
import { DEFAULT_PREFIX_BLOCK, DEFAULT_PREFIX_CHUNK, PrefixCache, prefixIneligible, releaseKv } from './prefix.js';
import { openSession, PromptPrefill, yieldToLoop, type Session } from './session.js';
import type { GenerateOptions, GeneratedToken, GenerationStats, PromptInput } from './types.js';

const MiB = 1024 * 1024;

/**
 * The default KV budget: half the memory the OS reports available when the scheduler starts (the
 * weights are already mapped by then), at least 64 MiB.
 */
export function defaultKvBudgetBytes(): number {
  return Math.max(64 * MiB, Math.floor(freemem() / 2));
}

export interface SchedulerOptions {
  /** Most sequences admitted at once (prefilling or decoding); later ones wait in arrival order. Default 8. */
  maxBatch?: number;
  /**
   * KV memory (bytes) the running sequences and the prefix cache may hold together. A request waits
   * until its KV need fits next to the running ones; one that needs more than the whole budget fails
   * with KV_BUDGET. Default `defaultKvBudgetBytes()` (half the available memory).
   */
  kvBudgetBytes?: number;
  /**
   * Prefix reuse across requests (default true). `{ blockSize, chunk }`: tokens per block (default 64)
   * and the prefill chunk of the requests that take part, which is also the granularity of a restore
   * (default 64; see prefix.ts for why reuse needs one grid).
   */
  prefixCache?: boolean | { blockSize?: number; chunk?: number };
  /**
   * Prefill chunk (tokens) while other sequences are decoding, so they get a step between chunks
   * instead of waiting out a whole 2048-token chunk. Alone, a prompt goes in with its normal chunk.
   * Default 256 (the prefill GEMM runs near its full rate from ~64 rows).
   */
  sharedPrefillChunk?: number;
}

/** One submitted request: iterate it for tokens; `stats` resolves when it ends. */
export class BatchedGeneration implements AsyncIterable<GeneratedToken> {
  private readonly items: GeneratedToken[] = [];
  private wake: (() => void) | null = null;
  private ended = false;
  private error: unknown = null;
  private started = false;
  /** Set when the consumer stops iterating early: the scheduler then drops the request. */
  cancelled = false;
  private resolveStats!: (s: GenerationStats) => void;
  private rejectStats!: (e: unknown) => void;
  readonly stats: Promise<GenerationStats> = new Promise((res, rej) => {
    this.resolveStats = res;
    this.rejectStats = rej;
  });

  constructor() {
    this.stats.catch(() => undefined); // errors surface through the iterator
  }

  /** @internal scheduler side */
  push(items: readonly GeneratedToken[]): void {
    if (!items.length) return;
    this.items.push(...items);
    this.signal();
  }
  /** @internal */
  end(stats: GenerationStats): void {
    this.ended = true;
    this.resolveStats(stats);
    this.signal();
  }
  /** @internal */
  fail(e: unknown): void {
    this.ended = true;
    this.error = e;
    this.rejectStats(e);
    this.signal();
  }
  private signal(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GeneratedToken> {
    if (this.started) throw new MlxcelError('GENERATION_REUSED', 'a generation can be iterated once');
    this.started = true;
    try {
      for (;;) {
        while (this.items.length) yield this.items.shift()!;
        if (this.ended) {
          if (this.error) throw this.error;
          return;
        }
        await new Promise<void>((r) => (this.wake = r));
      }
    } finally {
      if (!this.ended) this.cancelled = true;
    }
  }

  /** Runs to the end and returns the whole text. */
  async text(): Promise<string> {
    let s = '';
    for await (const t of this) s += t.text;
    return s;
  }
}

/** A request waiting for admission (its session opened once it reaches the head of the queue). */
interface Pending {
  gen: BatchedGeneration;
  prompt: PromptInput;
  opts: GenerateOptions;
  t0: number;
  session?: Session;
  /** KV bytes it will need (with `session`). */
  need?: number;
}

/** An admitted request: its session (ids, state, emitter, prefill) and where it stands. */
interface Active extends Session {
  gen: BatchedGeneration;
  opts: GenerateOptions;
  /** KV bytes reserved for it. */
  reserve: number;
  /** Prefix blocks pinned at admission, until its prefill starts. */
  pinned: PrefixTrack | null;
  /** Its prefix track once its prefill started (undefined before). */
  track?: PrefixTrack | null;
  cachedTokens: number;
  /** Logits waiting to be sampled, the token waiting to be fed, or neither (prefilling). */
  logits: Float32Array | null;
  next: number | null;
  t0: number;
  prefillMs: number;
}

export class BatchScheduler {
  readonly maxBatch: number;
  readonly sharedPrefillChunk: number;
  readonly kvBudgetBytes: number;
  /** The prefix cache (null when disabled). */
  readonly prefixCache: PrefixCache | null;
  private readonly pending: Pending[] = [];
  private readonly active: Active[] = [];
  private running = false;
  private reserved = 0;
  /**
   * The decode steps' logits, [batch, vocab], reused step after step: sampleStep consumes every
   * sequence's row before the next decodeStep writes it (a fresh [8, 262144] array per step was 8 MiB of
   * new pages and garbage each step).
   */
  private decodeLogits: Float32Array = new Float32Array(0);

  constructor(private readonly loaded: LoadedModel, opts: SchedulerOptions = {}) {
    this.maxBatch = opts.maxBatch ?? 8;
    if (!Number.isInteger(this.maxBatch) || this.maxBatch < 1)
      throw new MlxcelError('BAD_OPTION', `maxBatch must be a positive integer, got ${opts.maxBatch}`);
    this.sharedPrefillChunk = opts.sharedPrefillChunk ?? 256;
    if (!Number.isInteger(this.sharedPrefillChunk) || this.sharedPrefillChunk < 1)
      throw new MlxcelError('BAD_OPTION', `sharedPrefillChunk must be a positive integer, got ${opts.sharedPrefillChunk}`);
    const budget = opts.kvBudgetBytes ?? defaultKvBudgetBytes();
    if (typeof budget !== 'number' || !Number.isFinite(budget) || budget <= 0)
      throw new MlxcelError('BAD_OPTION', `kvBudgetBytes must be a positive number of bytes, got ${String(opts.kvBudgetBytes)}`);
    this.kvBudgetBytes = Math.floor(budget);
    const pc = opts.prefixCache ?? true;
    if (pc !== false && pc !== true && (typeof pc !== 'object' || pc === null))
      throw new MlxcelError('BAD_OPTION', `prefixCache must be true, false or { blockSize }, got ${String(pc)}`);
    const blockSize = typeof pc === 'object' ? pc.blockSize ?? DEFAULT_PREFIX_BLOCK : DEFAULT_PREFIX_BLOCK;
    if (pc !== false && (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > 4096))
      throw new MlxcelError('BAD_OPTION', `prefixCache.blockSize must be an integer in 1..4096, got ${String(blockSize)}`);
    const chunk = typeof pc === 'object' ? pc.chunk ?? DEFAULT_PREFIX_CHUNK : DEFAULT_PREFIX_CHUNK;
    this.prefixCache = pc === false ? null : new PrefixCache(loaded, this.kvBudgetBytes, blockSize, chunk);
    // Finished sequences' KV buffers are kept for the next ones (up to half the budget): see KvBufferRecycler.
    kvBuffers.setLimit(Math.max(kvBuffers.limitBytes, Math.floor(this.kvBudgetBytes / 2)));
  }

  /** Sequences admitted now (prefilling or decoding) and waiting. */
  get load(): { active: number; waiting: number } {
    return { active: this.active.length, waiting: this.pending.length };
  }

  /** KV bytes reserved for the admitted sequences (what admission weighs against `kvBudgetBytes`). */
  get reservedKvBytes(): number {
    return this.reserved;
  }

  /** The prefix cache's counters (null when disabled). */
  prefixStats(): PrefixPoolStats | null {
    return this.prefixCache?.pool.stats() ?? null;
  }

  /**
   * Queues a generation. Options as for generate(); `prefillChunk`, `state`, `kvCache` per request.
   * Its stats carry `cachedTokens`: prompt tokens restored from the prefix cache instead of prefilled.
   */
  submit(prompt: PromptInput, opts: GenerateOptions = {}): BatchedGeneration {
    const gen = new BatchedGeneration();
    this.pending.push({ gen, prompt, opts, t0: performance.now() });
    if (!this.running) {
      this.running = true;
      void this.pump();
    }
    return gen;
  }

  private async pump(): Promise<void> {
    try {
      while (this.pending.length || this.active.length) {
        this.admit();
        this.dropFinished();
        this.prefillStep();
        this.sampleStep();
        this.decodeStep();
        await yieldToLoop();
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Admits waiting requests in arrival order while fewer than maxBatch run and the head of the queue's
   * KV need fits next to theirs (a request alone is admitted whenever it fits the whole budget).
   */
  private admit(): void {
    while (this.active.length < this.maxBatch && this.pending.length) {
      const p = this.pending[0]!;
      try {
        if (!p.session) {
          p.session = this.open(p);
          p.need = this.kvNeed(p.session);
          if (p.need > this.kvBudgetBytes)
            throw new MlxcelError(
              'KV_BUDGET',
              `the request needs about ${mib(p.need)} MiB of KV cache (${p.session.state.offset + p.session.ids.length} prompt tokens + ` +
                `${p.session.emitter.maxTokens} to generate), more than the whole KV budget of ${mib(this.kvBudgetBytes)} MiB (--kv-budget)`,
            );
        }
      } catch (e) {
        this.pending.shift();
        p.gen.fail(e);
        continue;
      }
      if (this.active.length > 0 && this.reserved + p.need! > this.kvBudgetBytes) return; // waits for KV room
      this.pending.shift();
      const s = p.session;
      // Pin the prefix blocks it will restore before the pool's share of the budget shrinks.
      const pinned = this.prefixCache?.pin(s.state, s.ids, p.opts) ?? null;
      this.reserved += p.need!;
      this.prefixCache?.pool.setBudget(this.kvBudgetBytes - this.reserved);
      this.active.push({ ...s, gen: p.gen, opts: p.opts, reserve: p.need!, pinned, cachedTokens: 0, logits: null, next: null, t0: p.t0, prefillMs: 0 });
    }
  }

  /**
   * The request's session; one that can take part in prefix reuse is prefilled on the prefix cache's
   * grid (its chunk size), so that later requests can continue from its rows exactly.
   */
  private open(p: Pending): Session {
    const s = openSession(this.loaded, p.prompt, p.opts);
    if (!this.prefixCache || prefixIneligible(s.state, p.opts) !== null) return s;
    const chunk = this.prefixCache.chunk;
    return { ...s, prefill: new PromptPrefill(this.loaded.model, s.state, s.ids, { chunk, overrides: p.opts.embeddingOverrides, spans: p.opts.atomicSpans }) };
  }

  /** KV bytes a session will hold at its end: its state's caches at prompt + token budget (0 for states that do not say). */
  private kvNeed(s: Session): number {
    const st = asPrefixReusable(s.state);
    if (!st) return 0;
    const model = this.loaded.model;
    const tokens = Math.min(model.maxContext, s.state.offset + s.ids.length + s.emitter.maxTokens);
    return kvBytesFor(st.caches, tokens, s.prefill.chunk);
  }

  /** Gives back what an ended request held: its reservation, its prefix pins, and its KV memory when the state is the scheduler's own. */
  private release(a: Active): void {
    if (a.opts.state === undefined) releaseKv(a.state);
    a.pinned?.release();
    a.track?.release();
    a.pinned = null;
    this.reserved -= a.reserve;
    a.reserve = 0;
    this.prefixCache?.pool.setBudget(this.kvBudgetBytes - this.reserved);
  }

  /** Ends aborted / cancelled requests and those the emitter finished. */
  private dropFinished(): void {
    for (let i = this.active.length - 1; i >= 0; i--) {
      const a = this.active[i]!;
      if (a.opts.signal?.aborted || a.gen.cancelled) {
        a.emitter.abort();
        this.finish(i);
      }
    }
  }

  private finish(i: number): void {
    const a = this.active[i]!;
    this.active.splice(i, 1);
    this.release(a);
    a.gen.end({ ...a.emitter.stats(a.ids.length, a.t0, a.prefillMs, performance.now()), cachedTokens: a.cachedTokens });
  }

  private fail(a: Active, e: unknown): void {
    const i = this.active.indexOf(a);
    if (i >= 0) this.active.splice(i, 1);
    this.release(a);
    a.gen.fail(e);
  }

  /**
   * One chunk of the oldest request still prefilling: a long prompt never stalls the others' decode for
   * more than one (shared-size) chunk. Chunked prefill gives the same logits as one pass.
   */
  private prefillStep(): void {
    const a = this.active.find((x) => !x.prefill.finished);
    if (!a) return;
    const t = performance.now();
    try {
      if (a.track === undefined) this.startPrefix(a);
      const othersDecoding = this.active.some((x) => x !== a && x.prefill.finished);
      const logits = a.prefill.next(othersDecoding ? this.sharedPrefillChunk : Infinity);
      a.opts.onPrefillProgress?.(a.prefill.done, a.ids.length);
      // Publish the blocks this chunk completed (and the prompt's partial last block at its end).
      const st = a.track ? asPrefixReusable(a.state) : null;
      if (st) a.track!.publish(a.ids, a.prefill.done, st.caches, a.prefill.finished);
      if (a.prefill.finished) a.logits = logits;
    } catch (e) {
      this.fail(a, e);
    }
    a.prefillMs += performance.now() - t;
  }

  /** Restores what the prefix cache holds of the prompt (its first prefill step; the state is still fresh). */
  private startPrefix(a: Active): void {
    if (!this.prefixCache) {
      a.track = null;
      return;
    }
    const use = this.prefixCache.begin(a.state, a.ids, a.opts, a.pinned);
    a.pinned = null;
    a.track = use.track;
    a.cachedTokens = use.cachedTokens;
    if (use.cachedTokens > 0) a.prefill.skip(use.cachedTokens);
  }

  private sampleStep(): void {
    for (let i = this.active.length - 1; i >= 0; i--) {
      const a = this.active[i]!;
      if (!a.logits) continue;
      const logits = a.logits;
      a.logits = null;
      try {
        const { items, next } = a.emitter.hasBudget ? a.emitter.emit(logits) : { items: [], next: null };
        a.gen.push(items);
        if (next === null) this.finish(i);
        else a.next = next;
      } catch (e) {
        this.fail(a, e);
      }
    }
  }

  /** One batched forward pass over every sequence with a token to feed. */
  private decodeStep(): void {
    const batch = this.active.filter((a) => a.next !== null);
    if (!batch.length) return;
    try {
      const need = batch.length * this.loaded.model.vocabSize;
      if (this.decodeLogits.length < need) this.decodeLogits = persistentFloats(need);
      const out = this.loaded.model.forward(
        batch.map((a) => ({ ids: Int32Array.of(a.next!), state: a.state, embeddingOverrides: a.opts.decodeEmbedding?.(a.next!) })),
        { logits: 'last', logitsOut: this.decodeLogits },
      );
      batch.forEach((a, k) => {
        a.next = null;
        a.logits = out[k]!;
      });
    } catch (e) {
      // A failed batched pass leaves every state in it undefined: fail them all.
      for (const a of batch) this.fail(a, e);
    }
  }
}

const mib = (b: number) => (b / MiB).toFixed(1);
