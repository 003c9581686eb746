import type { RopeRegime, RopeSpecData, RopeTableName } from './types.js';

function checkLength(n: number, what: string): void {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${what} must be a non-negative integer, got ${n}`);
}

function make(spec: RopeSpecData, table: RopeTableName, scale: number, seqLen?: number): RopeRegime {
  const id = `${spec.type}:${table}${seqLen !== undefined ? `@${seqLen}` : ''}:a=${scale}:h=${spec.hash}`;
  return Object.freeze(seqLen !== undefined ? { table, scale, seqLen, id } : { table, scale, id });
}

/**
 * The regime (table + attention factor) for a sequence whose total length — tokens already cached plus the
 * tokens of this step — is `totalLength`.
 *
 * - LongRoPE, policy 'hf': 'short' while totalLength ≤ original_max_position_embeddings (L₀), 'long' once it
 *   exceeds L₀. Chunked prefill must pass the final prompt length (cached + whole prompt), not the chunk end.
 *   Policy 'long-only': always 'long'.
 * - Dynamic NTK: the base depends on max(totalLength, L₀), so every length past L₀ is its own regime.
 * - Everything else: one regime ('single').
 */
export function regimeFor(spec: RopeSpecData, totalLength: number): RopeRegime {
  checkLength(totalLength, 'regimeFor: totalLength');
  const s = spec.scaling;
  switch (s.type) {
    case 'longrope': {
      const long = s.policy === 'long-only' || totalLength > s.originalMaxPositionEmbeddings;
      return long ? make(spec, 'long', s.longMscale) : make(spec, 'short', s.shortMscale);
    }
    case 'dynamic':
      return make(spec, 'dynamic', 1, Math.max(totalLength, s.originalMaxPositionEmbeddings));
    case 'yarn':
      return make(spec, 'single', s.attentionFactor);
    default:
      return make(spec, 'single', 1);
  }
}

export interface RegimeTransition {
  from: RopeRegime;
  to: RopeRegime;
  /** The regime differs between the two lengths. */
  changed: boolean;
  /**
   * Keys already cached (prevTotal > 0) were rotated under another regime: the engine must re-encode the whole
   * sequence (re-prefill) with `to` before running this step.
   */
  reencode: boolean;
}

/**
 * Compare the regime of a sequence before (`prevTotal` tokens cached) and after this step (`newTotal` tokens).
 * For LongRoPE under policy 'hf' this reports the short → long switch at the step whose total length first
 * exceeds L₀ (and long → short after a trim back to ≤ L₀, which also needs re-encoding).
 */
export function regimeTransition(spec: RopeSpecData, prevTotal: number, newTotal: number): RegimeTransition {
  checkLength(prevTotal, 'regimeTransition: prevTotal');
  checkLength(newTotal, 'regimeTransition: newTotal');
  const from = regimeFor(spec, prevTotal);
  const to = regimeFor(spec, newTotal);
  const changed = from.id !== to.id;
  return { from, to, changed, reencode: changed && prevTotal > 0 };
}

/** True when a spec has more than one regime (LongRoPE under policy 'hf', dynamic NTK). */
export function hasMultipleRegimes(spec: RopeSpecData): boolean {
  return (spec.scaling.type === 'longrope' && spec.scaling.policy === 'hf') || spec.scaling.type === 'dynamic';
}
