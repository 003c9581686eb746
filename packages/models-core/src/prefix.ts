/**
 * What a sequence state offers for prefix reuse across requests (the engine's prefix cache over
 * @mlxcel/cache's PrefixPool): its layer caches, the RoPE regime a prompt's keys are rotated with,
 * and a way to take restored rows as processed. GemmaState and PhiSequence implement it; a state
 * without it (or a model whose state keeps more than its caches) simply never reuses a prefix.
 */
import type { LayerCache } from '@mlxcel/cache';
import { MlxcelError, type SequenceState } from '@mlxcel/tensor';

export interface PrefixReusableState extends SequenceState {
  /** One cache per layer, in layer order. */
  readonly caches: readonly LayerCache[];
  /**
   * Id of the RoPE table the keys of a prompt whose final length is `totalLength` are rotated with
   * (Phi LongRoPE: short or long by length); a fixed id for models with one table for every length.
   */
  keyRegime(totalLength: number): string;
  /**
   * The caches of this fresh state now hold the rows of ids[0, n), restored from a prefix pool for a
   * prompt of `totalLength` tokens: take them as processed (offset n, and whatever else the state
   * records about its tokens), exactly as if they had been prefilled.
   */
  adoptRestoredPrefix(ids: Int32Array, n: number, totalLength: number): void;
}

/** The state as a PrefixReusableState, or null when it does not offer prefix reuse. */
export function asPrefixReusable(state: SequenceState): PrefixReusableState | null {
  const s = state as Partial<PrefixReusableState>;
  return Array.isArray(s.caches) && typeof s.keyRegime === 'function' && typeof s.adoptRestoredPrefix === 'function' ? (state as PrefixReusableState) : null;
}

/** Checks that every owning cache holds exactly n tokens after a restore (models call it in adoptRestoredPrefix). */
export function checkRestored(caches: readonly LayerCache[], n: number, who: string): void {
  caches.forEach((c, l) => {
    if (c.offset !== n) throw new MlxcelError('E_STATE', `${who}.adoptRestoredPrefix: layer ${l}'s ${c.kind} cache holds ${c.offset} tokens, not the ${n} restored`);
  });
}
