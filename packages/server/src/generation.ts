/**
 * One accepted chat or completions request, from tokenized prompts to the last byte: submits every
 * prompt × n choices to the engine thread, collects or streams their tokens, and ends early and
 * cleanly on client disconnect, request timeout or server shutdown (streams then get a final chunk,
 * an error event and `[DONE]`).
 */
import { PassThrough } from 'node:stream';
import { ToolCallStreamParser, toolFormatById, type ParserOutput, type ToolCall, type ToolCallDelta } from '@mlxcel/engine';
import { ApiError, fromEngineError } from './errors.js';
import {
  chatChunk, chatCompletion, chatLogprobs, chatUsageChunk, completion, completionLogprobs, usageOf,
  type CompletionFinishReason, type Envelope, type FinishReason,
} from './format.js';
import type { ServerMetrics } from './metrics.js';
import type { ParsedRequest } from './requests.js';
import type { EngineSamplingOptions } from './sampling-options.js';
import type { EngineClient, EngineError } from './worker/client.js';
import type { ChoiceStats, GrammarSpec, OutputStructure, TokenOut } from './worker/protocol.js';

export interface PromptJob {
  ids: Int32Array;
  options: EngineSamplingOptions;
  /** Text the completion starts with when `echo` is set. */
  echo: string;
  /** Completions `echo` with `logprobs`: the prompt tokens' entries (the first one's logprob null). */
  echoLogprobs?: TokenOut[];
  /** The grammar the output follows (null: free text). */
  grammar: GrammarSpec | null;
  suppressedIds?: number[];
  /** Tool-call format whose calls are parsed out of the text (null: none). */
  toolFormat: OutputStructure['toolFormat'];
  /** `parallel_tool_calls: false`: calls after the first are dropped (under tool_choice "auto" no grammar stops the model writing more). */
  singleCall?: boolean;
  /** A media prompt prepared on the engine thread. */
  media?: number;
}

interface Choice {
  index: number;
  /** At most one tool call is kept. */
  singleCall: boolean;
  /** The prompt it continues (best_of ranks candidates per prompt). */
  prompt: number;
  /** Content text (tool-call blocks taken out where a parser runs). */
  text: string;
  items: TokenOut[];
  finish: FinishReason | null;
  generated: number;
  lastTokenAt: number;
  parser: ToolCallStreamParser | null;
  toolCalls: ToolCall[];
  /** Sum of the sampled tokens' logprobs (best_of's score is the mean). */
  logprobSum: number;
}

/** Why a request was ended before its choices finished on their own. */
export type EndReason = { code: 'request_timeout' | 'server_shutdown'; message: string };

const finishOf = (s: ChoiceStats): FinishReason => (s.finishReason === 'length' || s.finishReason === 'abort' ? 'length' : 'stop');

export interface Counts {
  promptTokens: number;
  /** Prompt tokens restored from the prefix cache (usage.prompt_tokens_details.cached_tokens). */
  cachedTokens: number;
  completionTokens: number;
  /** Arrival to the first generated token (absent before it). */
  ttftMs?: number;
}

export class GenerationRun {
  /** The SSE stream of a streaming request (null otherwise). */
  readonly stream: PassThrough | null;
  /** Non-streaming: the JSON body, or the ApiError to answer with. Streaming: resolves when the stream ends. */
  readonly result: Promise<unknown>;
  private resolveResult!: (v: unknown) => void;
  private readonly choices: Choice[] = [];
  private readonly byIndex = new Map<number, Choice>();
  private readonly promptTokens: number;
  /** Per prompt: tokens its first choice restored from the prefix cache (its choices share the prompt). */
  private readonly cachedByPrompt = new Map<number, number>();
  private readonly wantLogprobs: boolean;
  /** Candidates sampled per prompt (best_of; n when no best_of). */
  private readonly perPrompt: number;
  private readonly cancels: (() => void)[] = [];
  private left: number;
  private firstToken = true;
  private ttftMs: number | undefined;
  private ended = false;
  private endReason: EndReason | null = null;
  private failure: ApiError | null = null;

  constructor(
    engine: EngineClient,
    private readonly metrics: ServerMetrics,
    private readonly env: Envelope,
    private readonly kind: 'chat' | 'completions',
    private readonly req: ParsedRequest,
    jobs: PromptJob[],
    private readonly arrivedAt: number,
  ) {
    this.result = new Promise((r) => (this.resolveResult = r));
    this.perPrompt = Math.max(req.n, req.bestOf);
    jobs.forEach((job, p) => {
      for (let c = 0; c < this.perPrompt; c++) {
        const choice: Choice = {
          index: p * this.perPrompt + c, prompt: p, singleCall: job.singleCall === true, text: kind === 'completions' && req.echo ? job.echo : '', items: kind === 'completions' && job.echoLogprobs ? [...job.echoLogprobs] : [],
          finish: null, generated: 0, lastTokenAt: 0,
          parser: job.toolFormat ? new ToolCallStreamParser(toolFormatById(job.toolFormat).syntax) : null, toolCalls: [], logprobSum: 0,
        };
        this.choices.push(choice);
        this.byIndex.set(choice.index, choice);
      }
    });
    this.left = this.choices.length;
    this.promptTokens = jobs.reduce((s, j) => s + j.ids.length, 0);
    metrics.promptTokens.inc(this.promptTokens);
    this.stream = req.stream ? new PassThrough() : null;
    this.wantLogprobs = req.logprobs !== null;
    // Chat streams open each choice with its role, as OpenAI does (SDK accumulators need it).
    if (this.stream && kind === 'chat')
      for (const c of this.choices) this.write(chatChunk(env, c.index, { role: 'assistant', content: '', refusal: null }, null, null, req.includeUsage));
    // Completions with echo + logprobs stream the prompt's entries first.
    if (this.stream && kind === 'completions')
      for (const c of this.choices) if (c.items.length || (req.echo && c.text)) this.write(completion(env, [{ index: c.index, text: c.text, logprobs: completionLogprobs(c.items, this.wantLogprobs, 0), finish: null }], undefined));
    // best_of ranks candidates by their tokens' mean logprob, so it needs them even when the client did not ask.
    const engineLogprobs = req.logprobs ?? (this.perPrompt > req.n ? 0 : null);
    jobs.forEach((job, p) => {
      const submit = { ids: job.ids, n: this.perPrompt, firstIndex: p * this.perPrompt, options: job.options, logprobs: engineLogprobs, grammar: job.grammar, suppressedIds: job.suppressedIds, media: job.media };
      this.cancels.push(engine.submit(submit, {
        tokens: (i, items) => this.onTokens(this.byIndex.get(i)!, items),
        end: (i, s) => {
          // The first candidate of each prompt (choices of a prompt share it; best_of samples perPrompt).
          if (i % this.perPrompt === 0) {
            this.cachedByPrompt.set(i / this.perPrompt, s.cachedTokens);
            this.metrics.cachedPromptTokens.inc(s.cachedTokens);
          }
          this.endChoice(this.byIndex.get(i)!, finishOf(s));
        },
        error: (i, e: EngineError) => {
          this.failure ??= fromEngineError(e, kind === 'chat' ? 'messages' : 'prompt');
          this.cancel();
          const targets = i < 0 ? this.choices.filter((c) => !c.finish) : [this.byIndex.get(i)!];
          for (const c of targets) this.endChoice(c, 'stop');
        },
      }));
    });
  }

  get counts(): Counts {
    let cached = 0;
    for (const n of this.cachedByPrompt.values()) cached += n;
    return { promptTokens: this.promptTokens, cachedTokens: cached, completionTokens: this.choices.reduce((s, c) => s + c.generated, 0), ttftMs: this.ttftMs };
  }

  /** Stops generating (client gone): choices end as cut short. */
  cancel(): void {
    for (const c of this.cancels) c();
  }

  /** Ends the request early (timeout, shutdown); streams get a final chunk, an error event and [DONE]. */
  terminate(reason: EndReason): void {
    if (this.ended || this.endReason) return;
    this.endReason = reason;
    this.cancel(); // every choice then ends with finishReason 'abort' -> 'length'
  }

  private write(obj: unknown): void {
    // A client that went away leaves a destroyed stream: its remaining events go nowhere.
    if (this.stream && !this.stream.destroyed && !this.stream.writableEnded) this.stream.write(`data: ${JSON.stringify(obj)}\n\n`);
  }

  private onTokens(c: Choice, items: TokenOut[]): void {
    const now = performance.now();
    for (const t of items) {
      if (t.token < 0) continue;
      c.generated++;
      this.metrics.generatedTokens.inc();
      if (this.firstToken) {
        this.firstToken = false;
        this.ttftMs = Math.round((now - this.arrivedAt) * 10) / 10;
        this.metrics.timeToFirstToken.observe((now - this.arrivedAt) / 1000);
      }
      if (c.lastTokenAt) this.metrics.interTokenLatency.observe((now - c.lastTokenAt) / 1000);
      c.lastTokenAt = now;
    }
    for (const t of items) if (t.logprob) c.logprobSum += t.logprob.logprob;
    const offset = c.text.length;
    const raw = items.map((t) => t.text).join('');
    // With tools, call blocks become tool_calls; only the text around them is content.
    const parsed = c.parser ? keepCalls(c, c.parser.push(raw)) : { content: raw, toolCalls: [] };
    c.text += parsed.content;
    c.toolCalls.push(...toToolCalls(parsed.toolCalls));
    if (!this.stream) {
      if (this.wantLogprobs || this.perPrompt > this.req.n) c.items.push(...items);
      return;
    }
    this.streamPiece(c, parsed.content, parsed.toolCalls, items, offset);
  }

  /** One streamed chunk: content (and its tokens' logprobs), and the tool-call deltas completed by it. */
  private streamPiece(c: Choice, text: string, calls: ToolCallDelta[], items: readonly TokenOut[], offset: number): void {
    const { env, req } = this;
    const logprobs = this.wantLogprobs && items.some((t) => t.logprob);
    if (text || logprobs) {
      if (this.kind === 'chat') this.write(chatChunk(env, c.index, { content: text }, null, chatLogprobs(items, this.wantLogprobs), req.includeUsage));
      else this.write(completion(env, [{ index: c.index, text, logprobs: completionLogprobs(items, this.wantLogprobs, offset), finish: null }], undefined));
    }
    if (calls.length && this.kind === 'chat') this.write(chatChunk(env, c.index, { tool_calls: calls }, null, this.wantLogprobs ? chatLogprobs([], true) : null, req.includeUsage));
  }

  private endChoice(c: Choice, finish: FinishReason): void {
    if (c.finish) return;
    if (c.parser) {
      // A call block the model did not close (it stopped at EOS or the budget) is decoded if it can be.
      const rest = keepCalls(c, c.parser.flush());
      c.text += rest.content;
      c.toolCalls.push(...toToolCalls(rest.toolCalls));
      if (this.stream) this.streamPiece(c, rest.content, rest.toolCalls, [], c.text.length);
    }
    if (c.toolCalls.length) finish = 'tool_calls';
    c.finish = finish;
    if (this.stream) {
      const { env, req } = this;
      if (this.kind === 'chat') this.write(chatChunk(env, c.index, {}, finish, this.wantLogprobs ? chatLogprobs([], true) : null, req.includeUsage));
      else this.write(completion(env, [{ index: c.index, text: '', logprobs: null, finish: completionFinish(finish) }], undefined));
    }
    if (--this.left === 0) this.finish();
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    const { env, kind, req, choices } = this;
    const { completionTokens, cachedTokens } = this.counts;
    const usage = usageOf(this.promptTokens, completionTokens, cachedTokens);
    if (this.stream) {
      if (this.endReason) this.write({ error: { message: this.endReason.message, type: 'server_error', param: null, code: this.endReason.code } });
      else if (this.failure) this.write(this.failure.body());
      if (req.includeUsage && !this.failure) this.write(kind === 'chat' ? chatUsageChunk(env, usage) : completion(env, [], usage));
      if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.end('data: [DONE]\n\n');
      this.resolveResult(null);
    } else if (this.failure) {
      this.resolveResult(this.failure);
    } else if (this.endReason) {
      const timeout = this.endReason.code === 'request_timeout';
      this.resolveResult(new ApiError(timeout ? 504 : 503, this.endReason.message, { type: timeout ? 'timeout_error' : 'server_error', code: this.endReason.code }));
    } else if (kind === 'chat') {
      this.resolveResult(chatCompletion(env, choices.map((c) => ({ text: c.text, items: c.items, finish: c.finish ?? 'stop', toolCalls: c.toolCalls })), usage, this.wantLogprobs));
    } else {
      const best = this.perPrompt > req.n ? this.bestCandidates() : choices;
      this.resolveResult(completion(env, best.map((c, i) => ({ index: i, text: c.text, logprobs: completionLogprobs(c.items, this.wantLogprobs, 0), finish: completionFinish(c.finish ?? 'stop') })), usage));
    }
  }

  /** best_of: per prompt, the n candidates with the highest mean logprob per generated token, best first. */
  private bestCandidates(): Choice[] {
    const score = (c: Choice) => (c.generated ? c.logprobSum / c.generated : -Infinity);
    const out: Choice[] = [];
    for (let p = 0; p * this.perPrompt < this.choices.length; p++) {
      const candidates = this.choices.filter((c) => c.prompt === p).sort((a, b) => score(b) - score(a) || a.index - b.index);
      out.push(...candidates.slice(0, this.req.n));
    }
    return out;
  }
}

/** The parser's output with the calls a single-call choice may not make taken out. */
function keepCalls(c: Choice, out: ParserOutput): ParserOutput {
  if (!c.singleCall) return out;
  return { content: out.content, toolCalls: out.toolCalls.filter((d) => d.index === 0) };
}

/** A completion's finish reason (completions parse no tool calls, so 'tool_calls' cannot occur). */
const completionFinish = (f: FinishReason): CompletionFinishReason => (f === 'tool_calls' ? 'stop' : f);

/** Streamed deltas of complete calls -> the calls of a message. */
function toToolCalls(deltas: readonly ToolCallDelta[]): ToolCall[] {
  return deltas.map((d) => ({ id: d.id!, type: 'function', function: { name: d.function.name ?? '', arguments: d.function.arguments } }));
}
