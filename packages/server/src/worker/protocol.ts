/**
 * Messages between the HTTP thread and the two worker threads. Everything here is structured-clone
 * data (no class instances), so both sides agree on the shape by type alone.
 *
 *   HTTP thread --tokenize--> tokenizer worker --tokenized--> HTTP thread   (templates, encode)
 *   HTTP thread --submit----> engine worker    --tokens/end-> HTTP thread   (model, scheduler, decode)
 *
 * Tokenization has its own thread so that a long (legal) prompt being encoded never delays the
 * decode steps of the streams already running.
 */
import type { ChatMessage, ChatRequestFields, Grammar, ResponseFormat, ToolFormatId } from '@mlxcel/engine';
import type { EngineSamplingOptions } from '../sampling-options.js';

/** What the engine worker is started with (workerData). */

/** The prefix cache's state and cumulative counters, as the engine thread last reported them. */
export interface PrefixLoad {
  /** Stored blocks and their bytes; the cache's byte budget. */
  blocks: number;
  bytes: number;
  budgetBytes: number;
  /** Prompt lookups, those that restored at least one token, and the tokens restored in all. */
  lookups: number;
  hits: number;
  restoredTokens: number;
  /** Blocks evicted (least recently used) to make room, and blocks not stored for lack of room. */
  evictedBlocks: number;
  refusedBlocks: number;
}
export interface EngineWorkerInit {
  /** Model folder or Hugging Face repo id. */
  model: string;
  maxBatch: number;
  chatTemplateFile?: string;
  kvCache?: string;
  /** Absolute, resolved folder image_url file paths may name (`--allow-local-files`); absent = none. */
  allowLocalFiles?: string;
  /** KV memory budget of the scheduler in bytes (default: the engine's, from available memory). */
  kvBudgetBytes?: number;
  /** Prefix reuse across requests (default true). */
  prefixCache?: boolean;
}

/** What the tokenizer worker is started with (workerData): the resolved model folder. */
export interface TokenizerWorkerInit {
  dir: string;
  chatTemplateFile?: string;
}

/** Facts about the loaded model the HTTP side validates requests against. */
export interface ModelInfo {
  /** Resolved folder on disk. */
  dir: string;
  modelType: string;
  maxContext: number;
  /** Embedding rows: token ids must be below this. */
  vocabSize: number;
  /** The checkpoint has an audio tower (Gemma 3n / Gemma 4 with audio_config). */
  audioInput: boolean;
  /** The checkpoint has a vision tower that is not disabled (Gemma 3n / Gemma 4 with vision_config). */
  imageInput: boolean;
}

/** Facts about the tokenizer and chat template (from the tokenizer worker). */
export interface TokenizerInfo {
  hasTokenizer: boolean;
  hasChatTemplate: boolean;
  /**
   * Most characters any single token decodes to: a text longer than maxContext × this cannot fit
   * the context whatever the tokenization, so it is refused before being tokenized.
   */
  maxTokenChars: number;
  /** Roles the chat template renders (probed at load); `developer` is mapped to `system` before the check. */
  roles: string[];
}

export type PromptSpec =
  | { kind: 'chat'; messages: ChatMessage[] }
  | { kind: 'text'; text: string }
  | { kind: 'ids'; ids: number[] };

// ---- tokenizer worker ----
/** A checked grammar the output must follow, built on the tokenizer thread, compiled against the vocabulary on the engine's. */
export interface GrammarSpec {
  grammar: Grammar;
  /** Cache key of its source (same key = same grammar), so repeated schemas reuse their masks. */
  key?: string;
}

/** How a chat request's output is shaped: its grammar, banned ids and the tool-call format to parse. */
export interface OutputStructure {
  grammar: GrammarSpec | null;
  suppressedIds: number[];
  /** Tool-call format of the template (null: no tools). */
  toolFormat: ToolFormatId | null;
  /** The output may hold tool calls (parse them out into tool_calls). */
  parsesCalls: boolean;
}

export type ToTokenizer =
  | { type: 'tokenize'; id: number; prompt: PromptSpec; /** raw text: encode with the tokenizer's own specials, no template */ raw: boolean }
  /** A chat request with tools / response_format / grammar: prompt rendered through the tool format, grammar built. */
  | { type: 'plan'; id: number; request: ChatRequestFields }
  /** The grammar alone (completions with `grammar`, chat with media and a response format). */
  | { type: 'grammar'; id: number; responseFormat?: ResponseFormat; grammar?: string }
  | { type: 'decode'; id: number; ids: number[] };

export type FromTokenizer =
  | { type: 'ready'; info: TokenizerInfo }
  | { type: 'fatal'; code: string; message: string }
  | { type: 'tokenized'; id: number; ids: Int32Array }
  | { type: 'planned'; id: number; ids: Int32Array; structure: OutputStructure }
  | { type: 'grammar'; id: number; grammar: GrammarSpec | null }
  | { type: 'decoded'; id: number; text: string }
  | { type: 'error'; id: number; code: string; message: string; param?: string };

/**
 * A content part of a media request as the engine thread receives it: text, an image by URL (a
 * `data:` URL, or a path / file: URL where local files are allowed) or a base64 WAV clip. `where`
 * names the request field (`messages[1].content[0]`) for errors.
 */
export type MediaPart =
  | { type: 'text'; text: string }
  | { type: 'image'; url: string; where: string }
  | { type: 'audio'; data: string; where: string };

export interface MediaMessage extends Omit<ChatMessage, 'content'> {
  content: string | MediaPart[];
}

// ---- engine worker ----
export interface SubmitRequest {
  type: 'submit';
  /** Request id; choices of one request are told apart by their index. */
  id: number;
  ids: Int32Array;
  /** Choices sampled from this prompt (OpenAI `n`); they share one prefill of the prompt. */
  n: number;
  /** Index of the first choice (a completions request with several prompts numbers them on). */
  firstIndex: number;
  options: EngineSamplingOptions;
  /** Most likely tokens to report per step; null = no logprobs at all, 0 = the sampled token's only. */
  logprobs: number | null;
  /** The grammar the output follows (compiled here against the vocabulary), null = free text. */
  grammar?: GrammarSpec | null;
  /** Ids never sampled (tool_choice "none" bans the call-opening token). */
  suppressedIds?: number[];
  /** A media prompt made by `prepareMedia` (its soft tokens stay on the engine thread): the prompt of this request. */
  media?: number;
}

/** Encodes the images / audio of a chat request (decode, tower) and renders its prompt; answered by `prepared`. */
export interface PrepareMediaRequest {
  type: 'prepareMedia';
  id: number;
  messages: MediaMessage[];
}

export type ToEngine =
  | SubmitRequest
  | PrepareMediaRequest
  /** Drops a prepared media prompt that will not be submitted (the request was refused). */
  | { type: 'release'; id: number }
  /** Logprobs of the prompt's own tokens (completions echo + logprobs); answered by `promptLogprobs`. */
  | { type: 'promptLogprobs'; id: number; ids: Int32Array; top: number }
  | { type: 'cancel'; id: number };

export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

export interface TokenOut {
  token: number;
  text: string;
  /** Present when the request asked for logprobs (absent on text-only tail items). */
  logprob?: TokenLogprob & { top: TokenLogprob[] };
}

export interface ChoiceStats {
  promptTokens: number;
  /** Prompt tokens restored from the prefix cache instead of prefilled. */
  cachedTokens: number;
  generatedTokens: number;
  finishReason: 'eos' | 'stop' | 'length' | 'abort';
  timeToFirstTokenMs: number;
}

export type FromEngine =
  | { type: 'progress'; file: string; downloaded: number; total: number | null; done: boolean }
  | { type: 'ready'; info: ModelInfo }
  | { type: 'fatal'; code: string; message: string }
  | { type: 'tokens'; id: number; index: number; items: TokenOut[] }
  | { type: 'end'; id: number; index: number; stats: ChoiceStats }
  | { type: 'error'; id: number; index: number; code: string; message: string; param?: string }
  /** A prepared media prompt: its ids (for the context check and usage); submit with `media: id`. */
  | { type: 'prepared'; id: number; ids: Int32Array }
  /** One entry per prompt token; the first token's logprob is NaN (nothing precedes it: JSON null). */
  | { type: 'promptLogprobs'; id: number; items: TokenOut[] }
  | { type: 'load'; active: number; waiting: number; kvBytes: number; prefix: PrefixLoad | null };
