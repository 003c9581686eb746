/**
 * The contract between model packages (models-phi, models-gemma) and the engine. A model package
 * exports `ArchitectureDef`s; the engine's registry maps `model_type` to them.
 */
import type { WeightStore } from './checkpoint.js';

/** Per-sequence state a model keeps between forward calls (its layer caches and anything else). */
export interface SequenceState {
  /** Tokens already processed (the next token's position). */
  readonly offset: number;
  /** Drops the last n tokens of state where the cache kinds allow it; returns how many were dropped. */
  trim(n: number): number;
  /** Bytes of KV state held. */
  readonly nbytes: number;
  /**
   * An independent copy: same tokens, its own KV storage. Several continuations of one prompt (a
   * server's `n` choices) then share a single prefill. Optional: a state without it cannot be forked.
   */
  fork?(): SequenceState;
  /**
   * Tells the state how long the sequence will be once the prompt now being fed (possibly in chunks)
   * is in: `total` = cached + whole prompt. Optional; a model whose per-sequence setup depends on the
   * final length (Phi's LongRoPE picks its short or long table from it) uses it so that chunked prefill
   * equals one pass; the hint holds until a trim. The engine's prefill calls it before every chunk.
   */
  expectLength?(total: number): void;
}

export interface StateOptions {
  /** KV storage: 'f32' | 'f16' | 'bf16' | 'q8' | 'k8v4' (models pass it to @mlxcel/cache). */
  kvCache?: string;
}

export interface ForwardInput {
  /** New token ids of this sequence (rank 1). */
  ids: Int32Array;
  state: SequenceState;
  /** Optional replacement embeddings for some rows (multimodal soft tokens): rows x hidden, row index list. */
  embeddingOverrides?: { rows: Int32Array; values: Float32Array };
  /**
   * Multimodal spans of this call as [start, end) absolute position pairs, for models that attend
   * inside an image bidirectionally (Gemma 4 26B/31B sliding layers); other models ignore it. Every
   * span lies wholly inside this call (prefill chunks never split one).
   */
  bidirectionalSpans?: Int32Array;
}

export interface ForwardOptions {
  /** 'all' (default) returns [T, vocab] per sequence; 'last' returns only the final row [1, vocab]. */
  logits?: 'all' | 'last';
  /**
   * Receives each named intermediate over all rows of the batch: `embeddings` and `hidden_states.<layer>`
   * (the residual stream after layer `layer`, 0-based), each [rows, width] (`mlxcel trace --dump-layers`).
   * The values are the model's own buffers: copy what you keep.
   */
  onHiddenState?: (name: string, values: Float32Array, width: number) => void;
  /**
   * Where to write the logits (at least returned rows × vocab floats) instead of a new array; the
   * returned arrays are then views into it, valid until the caller writes it again. For callers that
   * consume the logits before their next pass (the batch scheduler's and generate()'s decode steps): a
   * fresh [8, 262144] array per step was 8 MiB of new pages and garbage each step.
   */
  logitsOut?: Float32Array;
}

export interface LanguageModel {
  readonly modelType: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly vocabSize: number;
  readonly numLayers: number;
  readonly hiddenSize: number;
  /** Maximum context the model supports (max_position_embeddings). */
  readonly maxContext: number;
  newState(opts?: StateOptions): SequenceState;
  /**
   * Runs a batch of sequences, each appending its ids to its own state. Returns raw logits per
   * sequence (after any final soft-capping; no token suppression). Batched == each alone.
   */
  forward(batch: ForwardInput[], opts?: ForwardOptions): Float32Array[];
  /** Ids the sampler must never pick (Phi-3-small's dummy ids); forward logits stay raw. */
  suppressedTokenIds(): Int32Array;
  /** Preferred prefill chunk in tokens (the engine default is 2048); null = the model opts out of chunked prefill. */
  readonly prefillChunk: number | null;
  /** Total parameter count and bytes of weights read per token (for inspect/bench). */
  readonly stats: { parameters: number; weightBytes: number };
}

export interface LoadContext {
  /** Folder of the checkpoint (config.json, tokenizer files). */
  dir?: string;
  config: Record<string, unknown>;
  weights: WeightStore;
}

export interface ArchitectureDef {
  /** model_type values this architecture serves (e.g. ['phi3']). */
  modelTypes: string[];
  load(ctx: LoadContext): LanguageModel;
  /**
   * Random weights in this architecture's checkpoint layout for a config (bench --random, tests).
   * `quantize` produces MLX affine weights where mlx-lm would quantize.
   */
  randomWeights?(config: Record<string, unknown>, opts?: { seed?: number; quantize?: { bits: number; groupSize: number } }): WeightStore;
}
