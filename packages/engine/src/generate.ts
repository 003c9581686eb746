/**
 * generate(): prompt -> streamed tokens and text. Chunked prefill, sampling per formats.md (e),
 * streaming detokenization, EOS / stop strings / max tokens, AbortSignal, and stats.
 *
 * Forward passes are synchronous native work; the loop yields to the event loop between tokens
 * so consumers stream output and cancellation is observed promptly.
 */
import { toTokenIds, type ForwardInput, type LanguageModel, type SequenceState } from '@mlxcel/tensor';
import type { ChatMessage } from './chat/index.js';
import { buildPrompt } from './chat/index.js';
import { MlxcelError } from './errors.js';
import type { LoadedModel } from './load.js';
import type { SamplerOptions } from './sampling/index.js';
import { TokenStepper } from './stepper.js';

export const DEFAULT_PREFILL_CHUNK = 2048;

export interface GenerateOptions extends SamplerOptions {
  /** Default 256. */
  maxTokens?: number;
  /** Stop strings: generation ends before the first occurrence (not emitted). */
  stop?: string[];
  signal?: AbortSignal;
  /** Prefill chunk in tokens; default the model's preference, else 2048. 0 = whole prompt at once. */
  prefillChunk?: number;
  /** KV storage kind for a new state ('f32', 'f16', 'bf16', 'q8', 'k8v4' where the model supports it). */
  kvCache?: string;
  /** Continue this sequence state (chat: the conversation's cache); the prompt ids are appended to it. */
  state?: SequenceState;
  /** Template options for string/message prompts. */
  noChatTemplate?: boolean;
  system?: string;
  /** Extra embeddings for some prompt rows (audio soft tokens). */
  embeddingOverrides?: ForwardInput['embeddingOverrides'];
  /** Called after each prefill chunk (tokens done, total). */
  onPrefillProgress?: (done: number, total: number) => void;
}

export interface GeneratedToken {
  /** The sampled id, or -1 for a final text-only item (text the detokenizer held back until the end). */
  token: number;
  /** Text that became final with this token (may be empty while UTF-8 or a stop string is pending). */
  text: string;
  logprob: number;
}

export interface GenerationStats {
  promptTokens: number;
  generatedTokens: number;
  finishReason: 'eos' | 'stop' | 'length' | 'abort';
  timeToFirstTokenMs: number;
  prefillTokensPerSec: number;
  decodeTokensPerSec: number;
  peakRssBytes: number;
}

export type PromptInput = string | readonly ChatMessage[] | ArrayLike<number>;

/** Token ids for a prompt: ids as given, or text/messages through the chat template. */
export function promptIds(loaded: LoadedModel, prompt: PromptInput, opts: Pick<GenerateOptions, 'noChatTemplate' | 'system'> = {}): Int32Array {
  // Ids go through the one validator (no Int32Array.from: it wraps 2^32 + 1 to 1 and 3.5 to 3).
  if (typeof prompt !== 'string' && !Array.isArray(prompt)) return toTokenIds(prompt, 'prompt', loaded.model.vocabSize);
  // A non-empty array is a conversation only when every entry is a message object; anything else is ids.
  const isMessages = (p: readonly unknown[]) => p.every((m) => m !== null && typeof m === 'object' && !Array.isArray(m) && 'role' in m);
  if (Array.isArray(prompt) && prompt.length > 0 && !isMessages(prompt)) return toTokenIds(prompt, 'prompt', loaded.model.vocabSize);
  if (!loaded.tokenizer) throw new MlxcelError('TOKENIZER_MISSING', `${loaded.dir} has no tokenizer; pass token ids instead of text`);
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

/** Runs the prompt through the model in chunks; returns the last row's logits. */
export function prefill(
  model: LanguageModel, state: SequenceState, ids: Int32Array, chunk: number,
  overrides?: ForwardInput['embeddingOverrides'], onProgress?: (done: number, total: number) => void,
): Float32Array {
  if (ids.length === 0) throw new MlxcelError('PROMPT_EMPTY', 'the prompt has no tokens');
  const step = chunk > 0 ? chunk : ids.length;
  let last: Float32Array | undefined;
  for (let i = 0; i < ids.length; i += step) {
    const end = Math.min(ids.length, i + step);
    last = prefillChunk(model, state, ids, i, end, overrides);
    onProgress?.(end, ids.length);
  }
  return last!;
}

/**
 * Prompt rows [start, end) through the model (the state holds rows [0, start) already); returns the
 * logits of row end - 1. Override rows in the chunk are re-based to it, and the model is told the
 * prompt's final length (LongRoPE picks its table from it).
 */
export function prefillChunk(
  model: LanguageModel, state: SequenceState, ids: Int32Array, start: number, end: number,
  overrides?: ForwardInput['embeddingOverrides'],
): Float32Array {
  const part = ids.subarray(start, end);
  let ov: ForwardInput['embeddingOverrides'];
  if (overrides) {
    const rows: number[] = [], idx: number[] = [];
    overrides.rows.forEach((r, j) => { if (r >= start && r < end) { rows.push(r - start); idx.push(j); } });
    if (rows.length) {
      const hidden = overrides.values.length / overrides.rows.length;
      const values = new Float32Array(rows.length * hidden);
      idx.forEach((j, k) => values.set(overrides.values.subarray(j * hidden, (j + 1) * hidden), k * hidden));
      ov = { rows: Int32Array.from(rows), values };
    }
  }
  const last = model.forward([{ ids: part, state, embeddingOverrides: ov, totalLength: state.offset + ids.length - start }], { logits: 'last' })[0]!;
  const V = model.vocabSize;
  return last.subarray(last.length - V);
}

export const yieldToLoop = () => new Promise<void>((r) => setImmediate(r));

/**
 * A running generation: iterate it for tokens; `stats` resolves when it ends; `text()` collects.
 */
export class Generation implements AsyncIterable<GeneratedToken> {
  private resolveStats!: (s: GenerationStats) => void;
  private rejectStats!: (e: unknown) => void;
  readonly stats: Promise<GenerationStats> = new Promise((res, rej) => {
    this.resolveStats = res;
    this.rejectStats = rej;
  });
  /** The sequence state after generation (keep it to continue a conversation). */
  state!: SequenceState;
  private started = false;

  constructor(private readonly loaded: LoadedModel, private readonly prompt: PromptInput, private readonly opts: GenerateOptions = {}) {
    this.stats.catch(() => undefined); // errors surface through the iterator
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GeneratedToken> {
    if (this.started) throw new MlxcelError('GENERATION_REUSED', 'a Generation can be iterated once');
    this.started = true;
    try {
      yield* this.run();
    } catch (e) {
      this.rejectStats(e);
      throw e;
    }
  }

  /** Runs to the end and returns the whole text. */
  async text(): Promise<string> {
    let s = '';
    for await (const t of this) s += t.text;
    return s;
  }

  private async *run(): AsyncGenerator<GeneratedToken> {
    const { loaded, opts } = this;
    const model = loaded.model;
    const ids = promptIds(loaded, this.prompt, opts);
    const state = opts.state ?? model.newState({ kvCache: opts.kvCache });
    this.state = state;
    checkContext(model, state, ids.length);
    const stepper = new TokenStepper(loaded, ids, opts, state);
    // A model may opt out of chunked prefill (prefillChunk null): then the prompt goes in whole.
    const chunk = opts.prefillChunk ?? (model.prefillChunk === null ? 0 : model.prefillChunk);

    const t0 = performance.now();
    let logits = prefill(model, state, ids, chunk, opts.embeddingOverrides, opts.onPrefillProgress);
    const tPrefill = performance.now();
    while (stepper.hasBudget) {
      if (opts.signal?.aborted) { stepper.abort(); break; }
      const { items, next } = stepper.step(logits);
      for (const item of items) yield item;
      if (next === null) break;
      logits = model.forward([{ ids: Int32Array.of(next), state }], { logits: 'last' })[0]!;
      await yieldToLoop();
    }
    this.resolveStats(stepper.stats(ids.length, t0, tPrefill - t0, performance.now()));
  }
}

/** Throws PROMPT_TOO_LONG when the prompt leaves no room for a generated token. */
export function checkContext(model: LanguageModel, state: SequenceState, promptTokens: number): void {
  if (state.offset + promptTokens + 1 > model.maxContext)
    throw new MlxcelError(
      'PROMPT_TOO_LONG',
      `the prompt (${promptTokens} tokens${state.offset ? ` after ${state.offset} cached` : ''}) leaves no room in the model's ${model.maxContext}-token context`,
    );
}

/** Starts a generation. `for await (const t of generate(m, 'Hi')) process.stdout.write(t.text)`. */
export function generate(loaded: LoadedModel, prompt: PromptInput, opts: GenerateOptions = {}): Generation {
  return new Generation(loaded, prompt, opts);
}
