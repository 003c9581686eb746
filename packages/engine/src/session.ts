/**
 * The session core shared by generate(), the BatchScheduler and trace: request setup (prompt ids,
 * sequence state, context check, the per-token emitter, the prefill chunk) and the chunked-prefill
 * loop. Each caller drives the same pieces its own way — generate() prefills to the end then decodes,
 * the scheduler interleaves one chunk per step with the other sequences' decode, trace keeps every
 * row's logits — so a request gives the same tokens whichever way it runs.
 */
import { overridesForChunk } from '@mlxcel/models-core';
import { toTokenIds, type ForwardInput, type ForwardOptions, type LanguageModel, type SequenceState } from '@mlxcel/tensor';
import { buildPrompt, type ChatMessage } from './chat/index.js';
import { MlxcelError } from './errors.js';
import type { LoadedModel } from './load.js';
import { TokenEmitter } from './token-emitter.js';
import type { GenerateOptions, PromptInput, PromptSpan } from './types.js';
import { hasImageParts } from './vision.js';

export const DEFAULT_PREFILL_CHUNK = 2048;

/** Token ids for a prompt: ids as given, or text/messages through the chat template. */
export function promptIds(loaded: LoadedModel, prompt: PromptInput, opts: Pick<GenerateOptions, 'noChatTemplate' | 'system'> = {}): Int32Array {
  // Ids go through the one validator (no Int32Array.from: it wraps 2^32 + 1 to 1 and 3.5 to 3).
  if (typeof prompt !== 'string' && !Array.isArray(prompt)) return toTokenIds(prompt, 'prompt', loaded.model.vocabSize);
  // A non-empty array is a conversation only when every entry is a message object; anything else is ids.
  const isMessages = (p: readonly unknown[]) => p.every((m) => m !== null && typeof m === 'object' && !Array.isArray(m) && 'role' in m);
  if (Array.isArray(prompt) && prompt.length > 0 && !isMessages(prompt)) return toTokenIds(prompt, 'prompt', loaded.model.vocabSize);
  if (!loaded.tokenizer) throw new MlxcelError('TOKENIZER_MISSING', `${loaded.dir} has no tokenizer; pass token ids instead of text`);
  if (hasImageParts(prompt as string | readonly ChatMessage[]))
    throw new MlxcelError('IMAGE_PROMPT', 'messages with image parts need their images encoded: use generate() (it does so) or imagePrompt() and pass its ids and embeddingOverrides');
  let input = prompt as string | readonly ChatMessage[];
  if (opts.system !== undefined) {
    const msgs: ChatMessage[] = typeof input === 'string' ? [{ role: 'user', content: input }] : [...input];
    input = [{ role: 'system', content: opts.system }, ...msgs];
  }
  const built = buildPrompt(loaded.tokenizer, input, {
    template: loaded.chatTemplate, noChatTemplate: opts.noChatTemplate, maxTokens: loaded.model.maxContext,
  });
  return Int32Array.from(built.ids);
}

/** Throws PROMPT_TOO_LONG when the prompt leaves no room for a generated token. */
export function checkContext(model: LanguageModel, state: SequenceState, promptTokens: number): void {
  if (state.offset + promptTokens + 1 > model.maxContext)
    throw new MlxcelError(
      'PROMPT_TOO_LONG',
      `the prompt (${promptTokens} tokens${state.offset ? ` after ${state.offset} cached` : ''}) leaves no room in the model's ${model.maxContext}-token context`,
    );
}

/** The prefill chunk of a request: the option, else the model's preference (null = whole prompt), else 2048. 0 = whole prompt. */
export function prefillChunkFor(model: LanguageModel, opts: Pick<GenerateOptions, 'prefillChunk'>): number {
  return opts.prefillChunk ?? (model.prefillChunk === null ? 0 : model.prefillChunk ?? DEFAULT_PREFILL_CHUNK);
}

export interface PromptPrefillOptions {
  /** Tokens per chunk; 0 = the whole prompt in one pass. */
  chunk: number;
  /** Embedding overrides indexed by prompt row (audio soft tokens); re-based to each chunk. */
  overrides?: ForwardInput['embeddingOverrides'];
  /** 'last' (default): each chunk returns its last row's logits [V]; 'all': every row's [rows, V]. */
  logits?: 'last' | 'all';
  /** Passed to every forward (e.g. onHiddenState for trace --dump-layers). */
  forward?: Omit<ForwardOptions, 'logits'>;
  /** Prompt spans a chunk boundary must not split (image spans); passed to the model as bidirectionalSpans. */
  spans?: readonly PromptSpan[];
}

/**
 * End of the prefill chunk that starts at `start` with nominal size `step`: moved past any span it
 * would cut (an image span is attended as a whole, and Gemma 4's bidirectional image attention needs
 * every row of it in one forward), so chunked prefill equals one pass.
 */
export function chunkEnd(start: number, step: number, total: number, spans: readonly PromptSpan[] = []): number {
  let end = Math.min(total, start + step);
  for (const s of spans) if (end > s.start && end < s.end) end = Math.min(total, s.end);
  return end;
}

/** The spans inside prompt rows [start, end) as absolute positions ([p, q) pairs), given the position of row `start`. */
export function spansInRange(spans: readonly PromptSpan[] | undefined, start: number, end: number, pos0: number): Int32Array | undefined {
  if (!spans?.length) return undefined;
  const out: number[] = [];
  for (const s of spans) if (s.start >= start && s.end <= end) out.push(pos0 + s.start - start, pos0 + s.end - start);
  return out.length ? Int32Array.from(out) : undefined;
}

/**
 * The chunked-prefill loop: prompt rows [done, done + chunk) through the model per `next()`, the state
 * holding rows [0, done) already. Override rows are re-based to each chunk, and the state is told the
 * prompt's final length before each chunk (`SequenceState.expectLength`: LongRoPE picks its table from
 * it), so chunked == one pass.
 */
export class PromptPrefill {
  /** Prompt tokens already through the model. */
  done = 0;
  readonly chunk: number;
  /** After `skip`: chunks end on the same multiples of `chunk` as a prefill from 0 would. */
  private grid = false;

  constructor(
    private readonly model: LanguageModel,
    private readonly state: SequenceState,
    readonly ids: Int32Array,
    private readonly opts: PromptPrefillOptions,
  ) {
    if (ids.length === 0) throw new MlxcelError('PROMPT_EMPTY', 'the prompt has no tokens');
    this.chunk = opts.chunk > 0 ? opts.chunk : ids.length;
  }

  get finished(): boolean {
    return this.done === this.ids.length;
  }

  /**
   * Takes prompt rows [0, n) as already in the state (restored from the prefix cache); n < ids.length,
   * so at least the last token is computed and gives the logits. The chunks then end where a prefill
   * from 0 would end them (the first one is shorter), so each row is computed in the same chunk split.
   */
  skip(n: number): void {
    if (this.done !== 0) throw new MlxcelError('PREFILL_STARTED', `skip(${n}): ${this.done} prompt tokens were already prefilled`);
    if (!Number.isInteger(n) || n < 0 || n >= this.ids.length)
      throw new MlxcelError('BAD_OPTION', `skip(${n}): must be an integer in 0..${this.ids.length - 1} (the last prompt token is always computed)`);
    this.done = n;
    this.grid = true;
  }

  /** Runs the next chunk of at most min(chunk, limit) tokens and returns its logits. */
  next(limit = this.chunk): Float32Array {
    const start = this.done;
    const step = this.grid ? this.chunk - (start % this.chunk) : this.chunk;
    const end = chunkEnd(start, Math.min(step, limit), this.ids.length, this.opts.spans);
    const overrides = this.opts.overrides ? overridesForChunk(this.opts.overrides, start, end - start) : undefined;
    const bidirectionalSpans = spansInRange(this.opts.spans, start, end, this.state.offset);
    this.state.expectLength?.(this.state.offset + this.ids.length - start);
    const input: ForwardInput = { ids: this.ids.subarray(start, end), state: this.state, embeddingOverrides: overrides, bidirectionalSpans };
    const logits = this.model.forward([input], { ...this.opts.forward, logits: this.opts.logits ?? 'last' })[0]!;
    this.done = end;
    return this.opts.logits === 'all' ? logits : logits.subarray(logits.length - this.model.vocabSize);
  }

  /** Runs every remaining chunk; returns the last chunk's logits. */
  runAll(onProgress?: (done: number, total: number) => void): Float32Array {
    let last: Float32Array = new Float32Array(0);
    while (!this.finished) {
      last = this.next();
      onProgress?.(this.done, this.ids.length);
    }
    return last;
  }
}

/** Lets the event loop run (streamed output, cancellation) between synchronous forward passes. */
export const yieldToLoop = (): Promise<void> => new Promise<void>((r) => setImmediate(r));

/**
 * One decode step of one sequence: feeds `token`, returns the logits of its position [V]. With
 * `logitsOut` (at least V floats) they are written there and the result is a view into it, valid until
 * the buffer is written again (generate() reuses one buffer for the whole generation).
 */
export function decodeOne(
  model: LanguageModel, state: SequenceState, token: number,
  decodeEmbedding?: (token: number) => ForwardInput['embeddingOverrides'] | undefined,
  logitsOut?: Float32Array,
): Float32Array {
  const out = model.forward([{ ids: Int32Array.of(token), state, embeddingOverrides: decodeEmbedding?.(token) }], { logits: 'last', logitsOut })[0]!;
  return out.subarray(out.length - model.vocabSize);
}

/** A request made ready to run: prompt ids, its state, the per-token emitter and the prompt's prefill. */
export interface Session {
  ids: Int32Array;
  state: SequenceState;
  emitter: TokenEmitter;
  prefill: PromptPrefill;
}

/** Request setup, the same for generate() and the scheduler. */
export function openSession(loaded: LoadedModel, prompt: PromptInput, opts: GenerateOptions): Session {
  const model = loaded.model;
  const ids = promptIds(loaded, prompt, opts);
  if (ids.length === 0) throw new MlxcelError('PROMPT_EMPTY', 'the prompt has no tokens');
  const state = opts.state ?? model.newState({ kvCache: opts.kvCache });
  checkContext(model, state, ids.length);
  const emitter = new TokenEmitter(loaded, ids, opts, state);
  const prefill = new PromptPrefill(model, state, ids, { chunk: prefillChunkFor(model, opts), overrides: opts.embeddingOverrides, spans: opts.atomicSpans });
  return { ids, state, emitter, prefill };
}
