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
   * The sequence's final length when this call is one chunk of a longer prefill. Models whose RoPE
   * table depends on the total length (LongRoPE) pick the table from it, so chunked prefill uses the
   * same table as a single pass instead of re-encoding at the crossing.
   */
  totalLength?: number;
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
