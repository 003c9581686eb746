/** Options of one attention call over a layer's cache. */
export interface AttendOptions {
  /** Score scale (usually 1/sqrt(head_dim); some models override it). */
  scale: number;
  /** Logit soft-capping: s = cap * tanh(s / cap). 0 or undefined = off. */
  softcap?: number;
  /** Sliding window: a key at position p is visible to a query at q iff q - p < window. */
  window?: number;
  /** Default true: keys after the query position are invisible. */
  causal?: boolean;
  /** Extra visibility mask [maskHeads, Tq, nKv slots], nonzero = visible (ANDed). Slot order = `slotPositions()`. */
  mask?: Uint8Array;
  maskHeads?: number;
}

/**
 * One layer's KV storage for one sequence. Keys are stored post-RoPE. Positions are absolute token
 * positions; `offset` is the number of tokens this cache has seen.
 */
export interface LayerCache {
  readonly kind: 'contiguous' | 'rotating' | 'shared' | 'quantized';
  readonly offset: number;
  readonly nKvHeads: number;
  readonly headDim: number;
  readonly vDim: number;
  /** Appends T rows of K [T, nKvHeads, headDim] and V [T, nKvHeads, vDim] at positions offset..offset+T-1. */
  update(k: Float32Array, v: Float32Array, T: number): void;
  /** Attention of q [Tq, nHeads, headDim] at absolute positions qPos over the stored keys: [Tq, nHeads, vDim]. */
  attend(q: Float32Array, Tq: number, nHeads: number, qPos: Int32Array, opts: AttendOptions): Float32Array;
  /** Absolute position of each storage slot (-1 = empty), in the order a mask must use. */
  slotPositions(): Int32Array;
  /** Drops the last n tokens; returns how many were dropped. */
  trim(n: number): number;
  /** Bytes of K/V storage held. */
  readonly nbytes: number;
}
