/**
 * Compile-time check (tsc --strict, run by test/sdk-types.test.ts): what the server's response
 * builders return is assignable to the official openai SDK's response types. A field the SDK
 * requires and the server does not send (`refusal`, `logprobs`, ...) fails this file.
 */
import type OpenAI from 'openai';
import type { chatChunk, chatCompletion, chatUsageChunk, completion } from '../../src/format.js';
import type { CompletionFinishReason } from '../../src/format.js';

declare const chat: ReturnType<typeof chatCompletion>;
declare const chunk: ReturnType<typeof chatChunk>;
declare const usageChunk: ReturnType<typeof chatUsageChunk>;
declare const text: ReturnType<typeof completion<CompletionFinishReason>>;
declare const textChunk: ReturnType<typeof completion<CompletionFinishReason | null>>;

/**
 * The SDK types `token_logprobs` / `top_logprobs` as lists of numbers / objects, but with `echo` the
 * API sends null for the prompt's first token (nothing precedes it); the server does as the API does.
 */
type EchoLogprobs = Omit<OpenAI.CompletionChoice.Logprobs, 'token_logprobs' | 'top_logprobs'> & {
  token_logprobs?: (number | null)[];
  top_logprobs?: ({ [key: string]: number } | null)[];
};
type WireChoice<F> = Omit<OpenAI.CompletionChoice, 'finish_reason' | 'logprobs'> & { finish_reason: F; logprobs: EchoLogprobs | null };

export const checks: [
  OpenAI.ChatCompletion,
  OpenAI.ChatCompletionChunk,
  OpenAI.ChatCompletionChunk,
  Omit<OpenAI.Completion, 'choices'> & { choices: WireChoice<OpenAI.CompletionChoice['finish_reason']>[] },
  // The SDK types streamed completions as Completion too, whose finish_reason is non-null; the wire
  // format sends null until the last chunk, so the chunk is checked against the SDK's choice minus it.
  Omit<OpenAI.Completion, 'choices'> & { choices: WireChoice<OpenAI.CompletionChoice['finish_reason'] | null>[] },
] = [chat, chunk, usageChunk, text, textChunk];
