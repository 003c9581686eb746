/**
 * Continuous batching: many generations over one model, decoded together. Every scheduler step runs
 * one prefill chunk of the oldest request still reading its prompt, then ONE batched forward pass with
 * the next token of every sequence that is decoding, so each weight is streamed from memory once per
 * step for all of them (decode is bound by memory bandwidth: a batch of 4 costs about what 1 costs).
 * Requests join and leave between steps; each keeps its own KV state, sampler, stop strings and token
 * budget (TokenEmitter), so a request's tokens are the ones generate() would give it alone.
 *
 *   const scheduler = new BatchScheduler(loaded, { maxBatch: 8 });
 *   for await (const t of scheduler.submit('Hi', { maxTokens: 64 })) process.stdout.write(t.text);
 */
import { MlxcelError } from './errors.js';
import type { LoadedModel } from './load.js';
import { openSession, yieldToLoop, type Session } from './session.js';
import type { GenerateOptions, GeneratedToken, GenerationStats, PromptInput } from './types.js';

export interface SchedulerOptions {
  /** Most sequences admitted at once (prefilling or decoding); later ones wait in arrival order. Default 8. */
  maxBatch?: number;
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

/** An admitted request: its session (ids, state, emitter, prefill) and where it stands. */
interface Active extends Session {
  gen: BatchedGeneration;
  opts: GenerateOptions;
  /** Logits waiting to be sampled, the token waiting to be fed, or neither (prefilling). */
  logits: Float32Array | null;
  next: number | null;
  t0: number;
  prefillMs: number;
}

export class BatchScheduler {
  readonly maxBatch: number;
  readonly sharedPrefillChunk: number;
  private readonly pending: { gen: BatchedGeneration; prompt: PromptInput; opts: GenerateOptions; t0: number }[] = [];
  private readonly active: Active[] = [];
  private running = false;

  constructor(private readonly loaded: LoadedModel, opts: SchedulerOptions = {}) {
    this.maxBatch = opts.maxBatch ?? 8;
    if (!Number.isInteger(this.maxBatch) || this.maxBatch < 1)
      throw new MlxcelError('BAD_OPTION', `maxBatch must be a positive integer, got ${opts.maxBatch}`);
    this.sharedPrefillChunk = opts.sharedPrefillChunk ?? 256;
    if (!Number.isInteger(this.sharedPrefillChunk) || this.sharedPrefillChunk < 1)
      throw new MlxcelError('BAD_OPTION', `sharedPrefillChunk must be a positive integer, got ${opts.sharedPrefillChunk}`);
  }

  /** Sequences admitted now (prefilling or decoding) and waiting. */
  get load(): { active: number; waiting: number } {
    return { active: this.active.length, waiting: this.pending.length };
  }

  /** Queues a generation. Options as for generate(); `prefillChunk`, `state`, `kvCache` per request. */
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

  private admit(): void {
    while (this.active.length < this.maxBatch && this.pending.length) {
      const { gen, prompt, opts, t0 } = this.pending.shift()!;
      try {
        this.active.push({ ...openSession(this.loaded, prompt, opts), gen, opts, logits: null, next: null, t0, prefillMs: 0 });
      } catch (e) {
        gen.fail(e);
      }
    }
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
    a.gen.end(a.emitter.stats(a.ids.length, a.t0, a.prefillMs, performance.now()));
  }

  private fail(a: Active, e: unknown): void {
    const i = this.active.indexOf(a);
    if (i >= 0) this.active.splice(i, 1);
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
      const othersDecoding = this.active.some((x) => x !== a && x.prefill.finished);
      const logits = a.prefill.next(othersDecoding ? this.sharedPrefillChunk : Infinity);
      a.opts.onPrefillProgress?.(a.prefill.done, a.ids.length);
      if (a.prefill.finished) a.logits = logits;
    } catch (e) {
      this.fail(a, e);
    }
    a.prefillMs += performance.now() - t;
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
      const out = this.loaded.model.forward(
        batch.map((a) => ({ ids: Int32Array.of(a.next!), state: a.state })),
        { logits: 'last' },
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
