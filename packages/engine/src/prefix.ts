/**
 * The scheduler's prefix cache: @mlxcel/cache's PrefixPool over one loaded model, and the rules for
 * which requests take part. A request whose prompt starts with tokens an earlier request already
 * prefilled (a shared system prompt) gets those rows copied into its fresh state and prefills only the
 * rest — always at least its last token, whose logits it samples from.
 *
 * The namespace of a prompt's chain: the model (folder and config hash), every layer's cache layout
 * (kind, KV storage kind, geometry, window, KV sharing) and the RoPE regime its keys are rotated with
 * at the prompt's length (Phi LongRoPE switches tables past original_max_position_embeddings).
 */
import { configHash, layerLayout, prefixNamespace, PrefixPool, type PrefixHit, type PrefixTrack } from '@mlxcel/cache';
import { asPrefixReusable, type PrefixReusableState } from '@mlxcel/models-core';
import type { SequenceState } from '@mlxcel/tensor';
import type { LoadedModel } from './load.js';
import type { GenerateOptions } from './types.js';

/** Default tokens per block: small enough to share most of a prompt, large enough to hash little. */
export const DEFAULT_PREFIX_BLOCK = 64;

/** Why a request cannot take part in prefix reuse, or null when it can. */
export function prefixIneligible(state: SequenceState, opts: GenerateOptions): string | null {
  if (!asPrefixReusable(state)) return 'the model\'s sequence state does not offer prefix reuse';
  if (state.offset > 0) return 'the request continues a sequence state that already holds tokens';
  if (opts.embeddingOverrides || opts.atomicSpans?.length)
    return 'the prompt carries image or audio soft tokens, whose rows depend on the media and not on the token ids';
  return null;
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

  constructor(private readonly loaded: LoadedModel, budgetBytes: number, blockSize = DEFAULT_PREFIX_BLOCK) {
    this.pool = new PrefixPool({ budgetBytes, blockSize });
    this.model = `${loaded.dir}|${configHash(loaded.model.config)}`;
  }

  private namespace(state: PrefixReusableState, promptLength: number) {
    const layout = layerLayout(state.caches);
    return { layout, ns: prefixNamespace({ model: this.model, layout, ropeRegime: state.keyRegime(promptLength) }) };
  }

  /** Looks the prompt up and pins what it found (at admission, so that the budget given to the new sequence cannot evict it). */
  pin(state: SequenceState, ids: Int32Array, opts: GenerateOptions): PrefixTrack | null {
    const s = prefixIneligible(state, opts) === null ? asPrefixReusable(state)! : null;
    if (!s) return null;
    const { ns, layout } = this.namespace(s, ids.length);
    return this.pool.track(ns, layout, this.pool.lookup(ns, ids, ids.length - 1, layout));
  }

  /**
   * Restores the longest stored prefix of `ids` (at most ids.length − 1 tokens) into the fresh `state`
   * and returns the track its prefill publishes with (`pinned`, from `pin`, is released).
   */
  begin(state: SequenceState, ids: Int32Array, opts: GenerateOptions, pinned: PrefixTrack | null = null): PrefixUse {
    pinned?.release();
    const why = prefixIneligible(state, opts);
    if (why) return { track: null, cachedTokens: 0, note: why };
    const s = asPrefixReusable(state)!;
    const { ns, layout } = this.namespace(s, ids.length);
    const hit: PrefixHit = this.pool.lookup(ns, ids, ids.length - 1, layout);
    if (hit.tokens > 0) {
      this.pool.restore(hit, s.caches);
      s.adoptRestoredPrefix(ids, hit.tokens, ids.length);
    }
    return { track: this.pool.track(ns, layout, hit), cachedTokens: hit.tokens, note: hit.limitedBy };
  }
}
