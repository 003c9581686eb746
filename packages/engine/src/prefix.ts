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
import { prefillChunkFor } from './session.js';
import type { GenerateOptions } from './types.js';

/** Default tokens per block: small enough to share most of a prompt, large enough to hash little. */
export const DEFAULT_PREFIX_BLOCK = 64;

/**
 * Restored prefixes end on a multiple of this many rows, and leave at least MIN_SUFFIX rows to compute.
 * Why: the prefill GEMMs tile rows (up to 32 per tile: two AVX-512 vectors) and send M ≤ 4 to the GEMV
 * kernel, so a row's arithmetic depends on where its tile starts and on the chunk's size. A suffix that
 * starts on a 32-row boundary and has more than 4 rows is computed row for row as in a fresh prefill
 * of the whole prompt, so the logits after reuse equal a fresh prefill's (on the fixtures: identical,
 * or within 1e-6 where a restored ring tiles its window differently); an unaligned or tiny suffix
 * would differ by up to ~1e-4 (what chunking alone costs).
 */
export const PREFIX_ROW_ALIGN = 32;
export const MIN_SUFFIX = 5;

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

  private lookup(ns: string, ids: Int32Array, layout: ReturnType<typeof layerLayout>): PrefixHit {
    return this.pool.lookup(ns, ids, ids.length - MIN_SUFFIX, layout, PREFIX_ROW_ALIGN);
  }

  /** Looks the prompt up and pins what it found (at admission, so that the budget given to the new sequence cannot evict it). */
  pin(state: SequenceState, ids: Int32Array, opts: GenerateOptions): PrefixTrack | null {
    const s = prefixIneligible(state, opts) === null ? asPrefixReusable(state)! : null;
    if (!s) return null;
    const { ns, layout } = this.namespace(s, ids.length);
    return this.pool.track(ns, layout, this.lookup(ns, ids, layout));
  }

  /**
   * Restores the longest stored prefix of `ids` (a multiple of PREFIX_ROW_ALIGN, leaving at least
   * MIN_SUFFIX tokens to prefill) into the fresh `state`
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
      const firstChunk = Math.min(prefillChunkFor(this.loaded.model, opts) || ids.length, ids.length);
      this.pool.restore(hit, s.caches, { firstChunk });
      s.adoptRestoredPrefix(ids, hit.tokens, ids.length);
    }
    return { track: this.pool.track(ns, layout, hit), cachedTokens: hit.tokens, note: hit.limitedBy };
  }
}
