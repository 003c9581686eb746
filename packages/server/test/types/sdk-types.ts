/**
 * Compile-time check (tsc --strict, run by test/sdk-types.test.ts): what the server's response
 * builders return is assignable to the official openai SDK's response types. A field the SDK
 * requires and the server does not send (`refusal`, `logprobs`, ...) fails this file.
 */
import type OpenAI from 'openai';
import type { chatChunk, chatCompletion, chatUsageChunk, completion } from '../../src/format.js';
import type { FinishReason } from '../../src/format.js';

declare const chat: ReturnType<typeof chatCompletion>;
declare const chunk: ReturnType<typeof chatChunk>;
declare const usageChunk: ReturnType<typeof chatUsageChunk>;
declare const text: ReturnType<typeof completion<FinishReason>>;
declare const textChunk: ReturnType<typeof completion<FinishReason | null>>;

export const checks: [
  OpenAI.ChatCompletion,
  OpenAI.ChatCompletionChunk,
  OpenAI.ChatCompletionChunk,
  OpenAI.Completion,
  // The SDK types streamed completions as Completion too, whose finish_reason is non-null; the wire
  // format sends null until the last chunk, so the chunk is checked against the SDK's choice minus it.
  Omit<OpenAI.Completion, 'choices'> & { choices: (Omit<OpenAI.CompletionChoice, 'finish_reason'> & { finish_reason: OpenAI.CompletionChoice['finish_reason'] | null })[] },
] = [chat, chunk, usageChunk, text, textChunk];
