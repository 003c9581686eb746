/**
 * The public types of a generation, in their own module so that generate.ts, the session core, the
 * token emitter and the batch scheduler all import them from here (no import cycle between them).
 */
import type { ForwardInput, SequenceState } from '@mlxcel/tensor';
import type { ChatMessage } from './chat/index.js';
import type { Grammar } from './constraint/grammar.js';
import type { CompiledConstraint, ResponseFormat } from './constraint/index.js';
import type { SamplerOptions } from './sampling/index.js';
import type { ImageInputOptions } from '@mlxcel/vision';

/** Prompt rows [start, end). */
export interface PromptSpan {
  start: number;
  end: number;
}

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
  /** Extra embeddings for some prompt rows (audio / image soft tokens). */
  embeddingOverrides?: ForwardInput['embeddingOverrides'];
  /**
   * Constrain the output to JSON (`{ type: 'json_object' }`) or to a JSON Schema
   * (`{ type: 'json_schema', schema }`); compiled once per request, applied as a mask every step.
   */
  responseFormat?: ResponseFormat;
  /** Constrain the output to a GBNF grammar (llama.cpp syntax). */
  grammar?: string | Grammar;
  /** A constraint compiled ahead with `compileConstraint` (overrides responseFormat / grammar; null = none). */
  constraint?: CompiledConstraint | null;
  /** Prompt row ranges [start, end) a prefill chunk boundary must not split (image spans). */
  atomicSpans?: readonly PromptSpan[];
  /**
   * Embedding override for a generated token fed back during decode (Gemma 3n: ids in the vision
   * vocabulary take the multimodal embedder's hard path on every forward), undefined = none.
   */
  decodeEmbedding?: (token: number) => ForwardInput['embeddingOverrides'] | undefined;
  /** Image options for message prompts with image parts (Gemma 4 soft-token budget, pixel limit). */
  image?: ImageInputOptions;
  /** Called after each prefill chunk (tokens done, total). */
  onPrefillProgress?: (done: number, total: number) => void;
  /** Report this many most likely tokens (with their logprobs) for every sampled token. Default 0. */
  topLogprobs?: number;
}

export interface GeneratedToken {
  /** The sampled id, or -1 for a final text-only item (text the detokenizer held back until the end). */
  token: number;
  /** Text that became final with this token (may be empty while UTF-8 or a stop string is pending). */
  text: string;
  logprob: number;
  /**
   * With `topLogprobs` > 0: the most likely ids at this step and their logprobs (same distribution as
   * `logprob`: after logit bias and penalties, before filters and temperature), most likely first.
   */
  topLogprobs?: { token: number; logprob: number }[];
}

export interface GenerationStats {
  promptTokens: number;
  /** Prompt tokens restored from the scheduler's prefix cache instead of prefilled (0 outside the scheduler). */
  cachedTokens: number;
  generatedTokens: number;
  finishReason: 'eos' | 'stop' | 'length' | 'abort';
  timeToFirstTokenMs: number;
  prefillTokensPerSec: number;
  decodeTokensPerSec: number;
  peakRssBytes: number;
}

export type PromptInput = string | readonly ChatMessage[] | ArrayLike<number>;

/** What one sampled token produced: the items to emit and the token to feed next. */
export interface StepResult {
  items: GeneratedToken[];
  /** The token to feed next, or null when the sequence has finished (see `TokenEmitter.finish`). */
  next: number | null;
}
