/**
 * Response bodies in the shapes of the OpenAI references (chat.completion, chat.completion.chunk,
 * text_completion), built from the engine's token events. Shapes are checked by the tests against
 * schemas.ts and, with tsc --strict, against the official SDK's types.
 */
import type { TokenLogprob, TokenOut } from './worker/protocol.js';

export type FinishReason = 'stop' | 'length';

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

export function chatCompletion(env: Envelope, choices: { text: string; items: TokenOut[]; finish: FinishReason }[], usage: Usage, logprobs: boolean) {
  return {
    ...env,
    object: 'chat.completion' as const,
    choices: choices.map((c, index) => ({
      index,
      message: { role: 'assistant' as const, content: c.text, refusal: null },
      logprobs: chatLogprobs(c.items, logprobs),
      finish_reason: c.finish,
    })),
    usage,
  };
}

export function chatChunk(
  env: Envelope,
  index: number,
  delta: { role?: 'assistant'; content?: string; refusal?: null },
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

/** Legacy completions logprobs: parallel lists; `offset` is where these tokens' text starts in the choice. */
export function completionLogprobs(items: readonly TokenOut[], wanted: boolean, offset: number) {
  if (!wanted) return null;
  const out = { tokens: [] as string[], token_logprobs: [] as number[], top_logprobs: [] as Record<string, number>[], text_offset: [] as number[] };
  let at = offset;
  for (const t of items) {
    if (t.logprob) {
      out.tokens.push(t.logprob.token);
      out.token_logprobs.push(t.logprob.logprob);
      out.top_logprobs.push(Object.fromEntries(t.logprob.top.map((x) => [x.token, x.logprob])));
      out.text_offset.push(at);
    }
    at += t.text.length;
  }
  return out;
}

/**
 * A text completion (`F` = FinishReason) or a streamed chunk of one (`F` = FinishReason | null).
 * Streamed chunks carry no `usage` (the SDK's Completion type has no null usage); with include_usage
 * the last chunk has it, with `choices: []`.
 */
export function completion<F extends FinishReason | null>(
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
