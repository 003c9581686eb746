/**
 * generate(): prompt -> streamed tokens and text. Chunked prefill, sampling per formats.md (e),
 * streaming detokenization, EOS / stop strings / max tokens, AbortSignal, and stats.
 *
 * Forward passes are synchronous native work; the loop yields to the event loop between tokens
 * so consumers stream output and cancellation is observed promptly.
 */
import type { ForwardInput, LanguageModel, SequenceState } from '@mlxcel/tensor';
import type { ChatMessage } from './chat/index.js';
import { buildPrompt } from './chat/index.js';
import { StreamingDetokenizer } from './detokenize.js';
import { MlxcelError } from './errors.js';
import type { LoadedModel } from './load.js';
import { Sampler, type SamplerOptions } from './sampling/index.js';
import { StopMatcher } from './stop.js';

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
  if (typeof prompt !== 'string' && !Array.isArray(prompt)) return Int32Array.from(prompt as ArrayLike<number>);
  if (Array.isArray(prompt) && prompt.length > 0 && typeof prompt[0] === 'number') return Int32Array.from(prompt as number[]);
  if (!loaded.tokenizer) throw new MlxcelError('TOKENIZER_MISSING', `${loaded.dir} has no tokenizer; pass token ids instead of text`);
  let input = prompt as string | readonly ChatMessage[];
  if (opts.system !== undefined) {
    const msgs: ChatMessage[] = typeof input === 'string' ? [{ role: 'user', content: input }] : [...input];
    input = [{ role: 'system', content: opts.system }, ...msgs];
  }
  const built = buildPrompt(loaded.tokenizer, input, { template: loaded.chatTemplate, noChatTemplate: opts.noChatTemplate });
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
    const part = ids.subarray(i, Math.min(ids.length, i + step));
    let ov: ForwardInput['embeddingOverrides'];
    if (overrides) {
      // Keep the override rows that fall in this chunk, re-based to the chunk.
      const rows: number[] = [], idx: number[] = [];
      overrides.rows.forEach((r, j) => { if (r >= i && r < i + part.length) { rows.push(r - i); idx.push(j); } });
      if (rows.length) {
        const hidden = overrides.values.length / overrides.rows.length;
        const values = new Float32Array(rows.length * hidden);
        idx.forEach((j, k) => values.set(overrides.values.subarray(j * hidden, (j + 1) * hidden), k * hidden));
        ov = { rows: Int32Array.from(rows), values };
      }
    }
    last = model.forward([{ ids: part, state, embeddingOverrides: ov, totalLength: state.offset + ids.length - i }], { logits: 'last' })[0]!;
    onProgress?.(Math.min(ids.length, i + step), ids.length);
  }
  const V = model.vocabSize;
  return last!.subarray(last!.length - V);
}

const yieldToLoop = () => new Promise<void>((r) => setImmediate(r));

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
    const maxTokens = opts.maxTokens ?? 256;
    if (!Number.isInteger(maxTokens) || maxTokens < 0) throw new MlxcelError('BAD_OPTION', `maxTokens must be a non-negative integer, got ${maxTokens}`);
    const ids = promptIds(loaded, this.prompt, opts);
    const state = opts.state ?? model.newState({ kvCache: opts.kvCache });
    this.state = state;
    if (state.offset + ids.length + 1 > model.maxContext)
      throw new MlxcelError(
        'PROMPT_TOO_LONG',
        `the prompt (${ids.length} tokens${state.offset ? ` after ${state.offset} cached` : ''}) leaves no room in the model's ${model.maxContext}-token context`,
      );
    const sampler = new Sampler({ ...opts, suppressedIds: [...(opts.suppressedIds ?? []), ...model.suppressedTokenIds()] });
    const eos = new Set(loaded.eosIds);
    const detok = loaded.tokenizer ? new StreamingDetokenizer(loaded.tokenizer) : null;
    const stop = new StopMatcher(opts.stop ?? []);
    const history: number[] = Array.from(ids);
    // A model may opt out of chunked prefill (prefillChunk null): then the prompt goes in whole.
    const chunk = opts.prefillChunk ?? (model.prefillChunk === null ? 0 : model.prefillChunk);

    const t0 = performance.now();
    let logits = prefill(model, state, ids, chunk, opts.embeddingOverrides, opts.onPrefillProgress);
    const tPrefill = performance.now();
    let generated = 0;
    let finish: GenerationStats['finishReason'] = 'length';
    let tFirst = tPrefill;
    while (generated < maxTokens) {
      if (opts.signal?.aborted) { finish = 'abort'; break; }
      const { token, logprob } = sampler.sample(logits, history);
      generated++;
      if (generated === 1) tFirst = performance.now();
      history.push(token);
      if (eos.has(token)) {
        finish = 'eos';
        // The EOS token itself carries no text, only whatever the detokenizer still held back.
        const rest = stop.push(detok ? detok.flush() : '').emit + stop.flush();
        yield { token, text: rest, logprob };
        break;
      }
      const piece = detok ? detok.push(token) : '';
      const { emit, stopped } = stop.push(piece);
      yield { token, text: emit, logprob };
      if (stopped) { finish = 'stop'; break; }
      if (generated >= maxTokens) {
        const tail = stop.push(detok ? detok.flush() : '').emit + stop.flush();
        if (tail) yield { token: -1, text: tail, logprob: 0 };
        break;
      }
      if (state.offset + 1 > model.maxContext) { finish = 'length'; break; }
      logits = model.forward([{ ids: Int32Array.of(token), state }], { logits: 'last' })[0]!;
      await yieldToLoop();
    }
    const tEnd = performance.now();
    const decodeSteps = Math.max(0, generated - 1);
    this.resolveStats({
      promptTokens: ids.length,
      generatedTokens: generated,
      finishReason: finish,
      timeToFirstTokenMs: tFirst - t0,
      prefillTokensPerSec: ids.length / Math.max(1e-9, (tPrefill - t0) / 1000),
      decodeTokensPerSec: decodeSteps / Math.max(1e-9, (tEnd - tFirst) / 1000),
      // The kernel tracks the process's high-water mark: no sampling needed in the decode loop.
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
    });
  }
}

/** Starts a generation. `for await (const t of generate(m, 'Hi')) process.stdout.write(t.text)`. */
export function generate(loaded: LoadedModel, prompt: PromptInput, opts: GenerateOptions = {}): Generation {
  return new Generation(loaded, prompt, opts);
}
