/**
 * Response bodies in the shapes of the OpenAI references (chat.completion, chat.completion.chunk,
 * text_completion), built from the engine's token events. Shapes are checked by the tests against
 * schemas.ts and, with tsc --strict, against the official SDK's types.
 */
import type { ToolCall, ToolCallDelta } from '@mlxcel/engine';
import type { TokenLogprob, TokenOut } from './worker/protocol.js';

export type FinishReason = 'stop' | 'length' | 'tool_calls';
/** Text completions never call tools. */
export type CompletionFinishReason = Exclude<FinishReason, 'tool_calls'>;

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** `cached_tokens`: prompt tokens whose KV came from the prefix cache (not prefilled again). */
  prompt_tokens_details: { cached_tokens: number };
}

/** Fields every response object of one request shares. */
export interface Envelope {
  id: string;
  created: number;
  model: string;
  system_fingerprint: string;
}

export const usageOf = (prompt: number, completion: number, cached = 0): Usage => ({
  prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: cached },
});

// ---- chat ----

const chatEntry = (l: TokenOut['logprob'] & object) => ({ token: l.token, logprob: l.logprob, bytes: l.bytes, top_logprobs: l.top.map(plain) });
const plain = (t: TokenLogprob) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes });

/** The `logprobs` of a chat choice for these tokens (null when the request did not ask). */
export function chatLogprobs(items: readonly TokenOut[], wanted: boolean) {
  if (!wanted) return null;
  return { content: items.filter((t) => t.logprob).map((t) => chatEntry(t.logprob!)), refusal: null };
}

/** The assistant message of a choice: its text, and the calls it made (content null when it only called tools). */
function assistantMessage(text: string, toolCalls: readonly ToolCall[]) {
  if (!toolCalls.length) return { role: 'assistant' as const, content: text, refusal: null };
  const calls = toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.function.name, arguments: c.function.arguments } }));
  return { role: 'assistant' as const, content: text.trim() ? text : null, refusal: null, tool_calls: calls };
}

export function chatCompletion(env: Envelope, choices: { text: string; items: TokenOut[]; finish: FinishReason; toolCalls: readonly ToolCall[] }[], usage: Usage, logprobs: boolean) {
  return {
    ...env,
    object: 'chat.completion' as const,
    choices: choices.map((c, index) => ({
      index,
      message: assistantMessage(c.text, c.toolCalls),
      logprobs: chatLogprobs(c.items, logprobs),
      finish_reason: c.finish,
    })),
    usage,
  };
}

export function chatChunk(
  env: Envelope,
  index: number,
  delta: { role?: 'assistant'; content?: string; refusal?: null; tool_calls?: ToolCallDelta[] },
  finish: FinishReason | null,
  logprobs: ReturnType<typeof chatLogprobs>,
  includeUsage: boolean,
) {
  return {
    ...env,
    object: 'chat.completion.chunk' as const,
    choices: [{ index, delta, logprobs, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  };
}

/** The last chunk of a stream with `stream_options.include_usage`: no choices, the whole request's usage. */
export function chatUsageChunk(env: Envelope, usage: Usage) {
  return { ...env, object: 'chat.completion.chunk' as const, choices: [], usage };
}

// ---- completions ----

/**
 * Legacy completions logprobs: parallel lists; `offset` is where these tokens' text starts in the
 * choice. An echoed prompt's first token has no logprob (NaN here): null in both lists, as OpenAI sends.
 */
export function completionLogprobs(items: readonly TokenOut[], wanted: boolean, offset: number) {
  if (!wanted) return null;
  const out = { tokens: [] as string[], token_logprobs: [] as (number | null)[], top_logprobs: [] as (Record<string, number> | null)[], text_offset: [] as number[] };
  let at = offset;
  for (const t of items) {
    if (t.logprob) {
      const none = Number.isNaN(t.logprob.logprob);
      out.tokens.push(t.logprob.token);
      out.token_logprobs.push(none ? null : t.logprob.logprob);
      out.top_logprobs.push(none ? null : Object.fromEntries(t.logprob.top.map((x) => [x.token, x.logprob])));
      out.text_offset.push(at);
    }
    at += t.text.length;
  }
  return out;
}

/**
 * A text completion (`F` = CompletionFinishReason) or a streamed chunk of one (`F` = CompletionFinishReason | null).
 * Streamed chunks carry no `usage` (the SDK's Completion type has no null usage); with include_usage
 * the last chunk has it, with `choices: []`.
 */
export function completion<F extends CompletionFinishReason | null>(
  env: Envelope,
  choices: { index: number; text: string; logprobs: ReturnType<typeof completionLogprobs>; finish: F }[],
  usage: Usage | undefined,
) {
  return {
    ...env,
    object: 'text_completion' as const,
    choices: choices.map((c) => ({ index: c.index, text: c.text, logprobs: c.logprobs, finish_reason: c.finish })),
    ...(usage === undefined ? {} : { usage }),
  };
}
