/**
 * The scheduler's prefix cache: @mlxcel/cache's PrefixPool over one loaded model, and the rules for
 * which requests take part. A request whose prompt starts with tokens an earlier request already
 * prefilled (a shared system prompt) gets those rows copied into its fresh state and prefills only the
 * rest — always at least its last token, whose logits it samples from.
 *
 * Exactness by construction: requests that take part are prefilled on one grid of `chunk`-token
 * chunks (default 64), and a prefix is restored only up to a multiple of it. The restored rows are
 * the bits a prefill of the same tokens on that grid writes, restored rings get a fresh ring's size
 * and slots, and the rest of the prompt then runs exactly the chunks a fresh prefill runs after that
 * point — the same native calls on the same inputs — so the logits are identical to a fresh prefill's.
 * (Restoring at any other point would leave a suffix computed in calls of other shapes: the GEMM row
 * tiling, the GEMV path for ≤ 4 rows and attention's split-K all depend on a call's rows, which moves
 * the logits by float rounding, up to ~1e-4 on the tiny random fixtures.)
 *
 * The namespace of a prompt's chain: the model (folder and config hash), every layer's cache layout
 * (kind, KV storage kind, geometry, window, KV sharing) and the RoPE regime its keys are rotated with
 * at the prompt's length (Phi LongRoPE switches tables past original_max_position_embeddings).
 */
import { configHash, KvCacheBase, kvBuffers, kvBytesReadPerStep, layerLayout, prefixNamespace, PrefixPool, type PrefixHit, type PrefixTrack } from '@mlxcel/cache';
import { asPrefixReusable, type PrefixReusableState } from '@mlxcel/models-core';
import type { SequenceState } from '@mlxcel/tensor';
import type { LoadedModel } from './load.js';
import { MlxcelError } from './errors.js';
import type { GenerateOptions } from './types.js';

/** Default tokens per block: small enough to share most of a prompt, large enough to hash little. */
export const DEFAULT_PREFIX_BLOCK = 64;

/**
 * Default prefill chunk of the requests that take part, and the granularity of a restore. Small enough
 * that a second request recomputes little of a shared prefix (under 64 tokens of it), large enough for
 * the prefill GEMMs to run near their full rate (from ~64 rows: two 32-row tiles).
 */
export const DEFAULT_PREFIX_CHUNK = 64;

/** Why a request cannot take part in prefix reuse, or null when it can. */
export function prefixIneligible(state: SequenceState, opts: GenerateOptions): string | null {
  if (!asPrefixReusable(state)) return 'the model\'s sequence state does not offer prefix reuse';
  if (state.offset > 0) return 'the request continues a sequence state that already holds tokens';
  if (opts.embeddingOverrides || opts.atomicSpans?.length)
    return 'the prompt carries image or audio soft tokens, whose rows depend on the media and not on the token ids';
  if (opts.prefillChunk !== undefined)
    return 'the request sets its own prefillChunk (reuse needs the prefix cache\'s prefill grid to stay exact)';
  return null;
}

/**
 * Gives a finished sequence's KV storage to @mlxcel/cache's buffer recycler, so the next sequence's
 * caches (and restores) reuse memory already mapped instead of faulting in fresh pages. The state must
 * not be used again.
 */
export function releaseKv(state: SequenceState): void {
  for (const c of asPrefixReusable(state)?.caches ?? []) if (c instanceof KvCacheBase) c.reset();
}

/**
 * Reserves a sequence's KV storage for `tokens` positions and faults it in now (KvCacheBase.preallocate
 * on each of its caches), and raises the KV buffer recycler's limit so that it can keep all of it;
 * returns the bytes reserved. With `releaseKv` afterwards the buffers wait in the recycler for the next
 * sequence: how `mlxcel bench` measures a sequence that runs on memory already backed, as an engine
 * with a preallocated context does.
 */
export function preallocateKv(state: SequenceState, tokens: number): number {
  let bytes = 0;
  for (const c of asPrefixReusable(state)?.caches ?? []) if (c instanceof KvCacheBase) bytes += c.preallocate(tokens);
  kvBuffers.setLimit(Math.max(kvBuffers.limitBytes, kvBuffers.heldBytes + bytes));
  return bytes;
}

/**
 * KV bytes one decode step of `state` reads at `positions` cached positions (@mlxcel/cache
 * kvBytesReadPerStep over its layer caches); 0 for a model whose state does not expose its caches.
 */
export function kvReadBytesPerStep(state: SequenceState, positions: number): number {
  const caches = asPrefixReusable(state)?.caches;
  return caches ? kvBytesReadPerStep(caches, positions) : 0;
}

/** What a request got from the prefix cache. */
export interface PrefixUse {
  /** Publishes the request's rows as it prefills; released when it ends. Null: the request takes no part. */
  track: PrefixTrack | null;
  /** Prompt tokens restored from the pool (not prefilled). */
  cachedTokens: number;
  /** Why no (or less) reuse: not eligible, or the layer gate that cut the hit back; null otherwise. */
  note: string | null;
}

export class PrefixCache {
  readonly pool: PrefixPool;
  private readonly model: string;

  /** `chunk`: the prefill grid of the requests that take part (a multiple of the block size is sensible, not required). */
  constructor(private readonly loaded: LoadedModel, budgetBytes: number, blockSize = DEFAULT_PREFIX_BLOCK, readonly chunk = DEFAULT_PREFIX_CHUNK) {
    if (!Number.isInteger(chunk) || chunk < 1) throw new MlxcelError('BAD_OPTION', `prefixCache.chunk must be a positive integer, got ${String(chunk)}`);
    this.pool = new PrefixPool({ budgetBytes, blockSize });
    this.model = `${loaded.dir}|${configHash(loaded.model.config)}`;
  }

  private namespace(state: PrefixReusableState, promptLength: number) {
    const layout = layerLayout(state.caches);
    return { layout, ns: prefixNamespace({ model: this.model, layout, ropeRegime: state.keyRegime(promptLength) }) };
  }

  /** The longest stored prefix that ends on the prefill grid and leaves the last token to compute. */
  private lookup(ns: string, ids: Int32Array, layout: ReturnType<typeof layerLayout>): PrefixHit {
    return this.pool.lookup(ns, ids, ids.length - 1, layout, this.chunk);
  }

  /** Looks the prompt up and pins what it found (at admission, so that the budget given to the new sequence cannot evict it). */
  pin(state: SequenceState, ids: Int32Array, opts: GenerateOptions): PrefixTrack | null {
    const s = prefixIneligible(state, opts) === null ? asPrefixReusable(state)! : null;
    if (!s) return null;
    const { ns, layout } = this.namespace(s, ids.length);
    return this.pool.track(ns, layout, this.lookup(ns, ids, layout));
  }

  /**
   * Restores the longest stored prefix of `ids` (a multiple of `chunk`, leaving at least the last
   * token to prefill) into the fresh `state`, which must then be prefilled in chunks of `chunk`,
   * and returns the track its prefill publishes with (`pinned`, from `pin`, is released).
   */
  begin(state: SequenceState, ids: Int32Array, opts: GenerateOptions, pinned: PrefixTrack | null = null): PrefixUse {
    pinned?.release();
    const why = prefixIneligible(state, opts);
    if (why) return { track: null, cachedTokens: 0, note: why };
    const s = asPrefixReusable(state)!;
    const { ns, layout } = this.namespace(s, ids.length);
    const hit: PrefixHit = this.lookup(ns, ids, layout);
    if (hit.tokens > 0) {
      // A fresh prefill's first chunk sizes its rings: restored rings take the same size and slots.
      this.pool.restore(hit, s.caches, { firstChunk: Math.min(this.chunk, ids.length) });
      s.adoptRestoredPrefix(ids, hit.tokens, ids.length);
    }
    return { track: this.pool.track(ns, layout, hit), cachedTokens: hit.tokens, note: hit.limitedBy };
  }
}
