/**
 * The per-token half of a generation, shared by generate() and the batch scheduler: sampling (with the
 * model's suppressed ids), EOS, streaming detokenization, stop strings held back until they resolve,
 * the token budget and the context limit. It never runs the model: feed `emit()` the logits of the
 * last position; it says what to emit and which token the caller should run through the model next
 * (null when the sequence has finished).
 */
import type { SequenceState } from '@mlxcel/tensor';
import { ConstrainedDecoding, compileConstraint } from './constraint/index.js';
import { StreamingDetokenizer } from './detokenize.js';
import { MlxcelError } from './errors.js';
import type { GenerateOptions, GeneratedToken, GenerationStats, StepResult } from './types.js';
import type { LoadedModel } from './load.js';
import { Sampler } from './sampling/index.js';
import { StopMatcher } from './stop.js';

export class TokenEmitter {
  generated = 0;
  finish: GenerationStats['finishReason'] = 'length';
  /** performance.now() at the first sampled token (0 before). */
  tFirst = 0;
  readonly maxTokens: number;
  private readonly sampler: Sampler;
  private readonly eos: Set<number>;
  private readonly detok: StreamingDetokenizer | null;
  private readonly stop: StopMatcher;
  private readonly history: number[];
  /** The request's grammar matcher and mask, when its output is constrained. */
  private readonly constrained: ConstrainedDecoding | null;
  private readonly topLogprobs: number;

  constructor(private readonly loaded: LoadedModel, promptIds: Int32Array, opts: GenerateOptions, private readonly state: SequenceState) {
    this.maxTokens = opts.maxTokens ?? 256;
    if (!Number.isInteger(this.maxTokens) || this.maxTokens < 0)
      throw new MlxcelError('BAD_OPTION', `maxTokens must be a non-negative integer, got ${this.maxTokens}`);
    this.sampler = new Sampler({ ...opts, suppressedIds: [...(opts.suppressedIds ?? []), ...loaded.model.suppressedTokenIds()] });
    this.eos = new Set(loaded.eosIds);
    this.detok = loaded.tokenizer ? new StreamingDetokenizer(loaded.tokenizer) : null;
    this.stop = new StopMatcher(opts.stop ?? []);
    this.history = Array.from(promptIds);
    const compiled = opts.constraint !== undefined ? opts.constraint : constraintFor(loaded, opts);
    this.constrained = compiled ? new ConstrainedDecoding(compiled) : null;
    this.topLogprobs = opts.topLogprobs ?? 0;
    if (!Number.isInteger(this.topLogprobs) || this.topLogprobs < 0)
      throw new MlxcelError('BAD_OPTION', `topLogprobs must be a non-negative integer, got ${this.topLogprobs}`);
  }

  /** Whether another token may be sampled (the budget is not spent). */
  get hasBudget(): boolean {
    return this.generated < this.maxTokens;
  }

  /** Ends the sequence as aborted. */
  abort(): void {
    this.finish = 'abort';
  }

  /** Samples from `logits` (the last position's row): what to emit, and the token to run next. */
  emit(logits: Float32Array): StepResult {
    if (!this.hasBudget) return { items: [], next: null };
    let token: number, logprob: number;
    if (this.constrained) {
      let lp = 0;
      token = this.constrained.choose(this.maxTokens - this.generated, (mask) => {
        const r = this.sampler.sample(logits, this.history, mask);
        lp = r.logprob;
        return r.token;
      });
      logprob = lp;
    } else ({ token, logprob } = this.sampler.sample(logits, this.history));
    const top = this.topLogprobs > 0 ? topK(this.sampler.logprobs, this.topLogprobs) : undefined;
    this.generated++;
    if (this.generated === 1) this.tFirst = performance.now();
    this.history.push(token);
    if (this.eos.has(token)) {
      this.finish = 'eos';
      // The EOS token itself carries no text, only whatever the detokenizer still held back.
      const rest = this.stop.push(this.detok ? this.detok.flush() : '').emit + this.stop.flush();
      return { items: [{ token, text: rest, logprob, topLogprobs: top }], next: null };
    }
    const piece = this.detok ? this.detok.push(token) : '';
    const { emit, stopped } = this.stop.push(piece);
    const items: GeneratedToken[] = [{ token, text: emit, logprob, topLogprobs: top }];
    if (stopped) {
      this.finish = 'stop';
      return { items, next: null };
    }
    if (this.generated >= this.maxTokens) {
      const tail = this.stop.push(this.detok ? this.detok.flush() : '').emit + this.stop.flush();
      if (tail) items.push({ token: -1, text: tail, logprob: 0 });
      this.finish = 'length';
      return { items, next: null };
    }
    if (this.state.offset + 1 > this.loaded.model.maxContext) {
      this.finish = 'length';
      return { items, next: null };
    }
    return { items, next: token };
  }

  /** Stats of the finished sequence; t0 = start (before prefill), tPrefill = prefill done. */
  stats(promptTokens: number, t0: number, prefillMs: number, tEnd: number): GenerationStats {
    const tFirst = this.tFirst || tEnd;
    const decodeSteps = Math.max(0, this.generated - 1);
    return {
      promptTokens,
      cachedTokens: 0,
      generatedTokens: this.generated,
      finishReason: this.finish,
      timeToFirstTokenMs: tFirst - t0,
      prefillTokensPerSec: promptTokens / Math.max(1e-9, prefillMs / 1000),
      decodeTokensPerSec: decodeSteps / Math.max(1e-9, (tEnd - tFirst) / 1000),
      // The kernel tracks the process's high-water mark: no sampling needed in the decode loop.
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
    };
  }
}

/** Compiles the request's responseFormat / grammar against the model's tokenizer (null: free text). */
function constraintFor(loaded: LoadedModel, opts: GenerateOptions) {
  const wants = opts.grammar !== undefined || (opts.responseFormat !== undefined && opts.responseFormat.type !== 'text');
  if (!wants) return null;
  if (!loaded.tokenizer) throw new MlxcelError('TOKENIZER_MISSING', `${loaded.dir} has no tokenizer: constrained output needs one`);
  return compileConstraint({ grammar: opts.grammar, responseFormat: opts.responseFormat }, loaded.tokenizer, { vocabSize: loaded.model.vocabSize, eosIds: loaded.eosIds });
}

/** The k largest entries of a log-probability row, largest first (one pass, a k-slot insertion list). */
function topK(lp: Float32Array, k: number): { token: number; logprob: number }[] {
  const out: { token: number; logprob: number }[] = [];
  for (let i = 0; i < lp.length; i++) {
    const v = lp[i]!;
    if (out.length === k && v <= out[k - 1]!.logprob) continue;
    let j = out.length < k ? out.length : k - 1;
    while (j > 0 && out[j - 1]!.logprob < v) j--;
    out.splice(j, 0, { token: i, logprob: v });
    if (out.length > k) out.pop();
  }
  return out;
}
