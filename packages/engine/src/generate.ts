/**
 * generate(): prompt -> streamed tokens and text. The session core (session.ts) sets the request up and
 * prefills in chunks; then sampling (engine README, "Sampling"), streaming detokenization, EOS / stop
 * strings / max tokens, AbortSignal, and stats.
 *
 * Forward passes are synchronous native work; the loop yields to the event loop between tokens
 * so consumers stream output and cancellation is observed promptly.
 */
import type { ForwardInput, LanguageModel, SequenceState } from '@mlxcel/tensor';
import { MlxcelError } from './errors.js';
import type { LoadedModel } from './load.js';
import { decodeOne, openSession, PromptPrefill, yieldToLoop } from './session.js';
import type { GenerateOptions, GeneratedToken, GenerationStats, PromptInput, PromptSpan } from './types.js';
import type { ChatMessage } from './chat/index.js';
import { hasImageParts, imagePrompt } from './vision.js';

/** Runs a whole prompt through the model in chunks (0 = one pass); returns the last row's logits. */
export function prefill(
  model: LanguageModel, state: SequenceState, ids: Int32Array, chunk: number,
  overrides?: ForwardInput['embeddingOverrides'], onProgress?: (done: number, total: number) => void,
  spans?: readonly PromptSpan[],
): Float32Array {
  return new PromptPrefill(model, state, ids, { chunk, overrides, spans }).runAll(onProgress);
}

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
    const { loaded } = this;
    let opts = this.opts;
    let prompt = this.prompt;
    if (typeof prompt !== 'string' && hasImageParts(prompt as readonly ChatMessage[])) {
      // Images in the messages: encode them, expand their placeholders, splice the soft tokens.
      const ip = await imagePrompt(loaded, prompt as readonly ChatMessage[], { system: opts.system, image: opts.image });
      prompt = ip.ids;
      opts = { ...opts, embeddingOverrides: ip.overrides, atomicSpans: ip.spans, decodeEmbedding: opts.decodeEmbedding ?? ip.decodeEmbedding };
    }
    const { ids, state, emitter, prefill: promptPrefill } = openSession(loaded, prompt, opts);
    this.state = state;
    const t0 = performance.now();
    let logits = promptPrefill.runAll(opts.onPrefillProgress);
    const tPrefill = performance.now();
    // Every step's logits are consumed (sampled, copied where kept) before the next step: one buffer.
    const logitsOut = new Float32Array(loaded.model.vocabSize);
    while (emitter.hasBudget) {
      if (opts.signal?.aborted) { emitter.abort(); break; }
      const { items, next } = emitter.emit(logits);
      for (const item of items) yield item;
      if (next === null) break;
      logits = decodeOne(loaded.model, state, next, opts.decodeEmbedding, logitsOut);
      await yieldToLoop();
    }
    this.resolveStats(emitter.stats(ids.length, t0, tPrefill - t0, performance.now()));
  }
}

/** Starts a generation. `for await (const t of generate(m, 'Hi')) process.stdout.write(t.text)`. */
export function generate(loaded: LoadedModel, prompt: PromptInput, opts: GenerateOptions = {}): Generation {
  return new Generation(loaded, prompt, opts);
}
