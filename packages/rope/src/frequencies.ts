import { hasMultipleRegimes, regimeFor } from './regime.js';
import type { RopeRegime, RopeSpecData } from './types.js';

export interface RopeFrequencies {
  /**
   * Inverse frequency (radians per position) of each of the tableDim / 2 pairs, in float64, with the
   * position scale (Phi-3-small `rope_position_scale`, linear `1/factor`) folded in. Gemma 4 proportional
   * RoPE has 0 for the pairs that do not rotate.
   */
  invFreq: Float64Array;
  /** Attention factor (mscale) multiplied into cos and sin. */
  attentionScale: number;
  regime: RopeRegime;
}

/** Resolve a regime argument: a RopeRegime of this spec, or a total length. */
export function resolveRegime(spec: RopeSpecData, regime: RopeRegime | number | undefined, who: string): RopeRegime {
  if (regime === undefined) {
    if (hasMultipleRegimes(spec)) {
      throw new RangeError(`${who}: a ${spec.type} spec has several regimes; pass a regime or a total length`);
    }
    return regimeFor(spec, 0);
  }
  if (typeof regime === 'number') return regimeFor(spec, regime);
  if (!regime.id.endsWith(`:h=${spec.hash}`) || !regime.id.startsWith(`${spec.type}:`)) {
    throw new RangeError(`${who}: regime ${regime.id} does not belong to this spec (hash ${spec.hash})`);
  }
  return regime;
}

/** θ^(−2i/d) for i = 0 … n−1, in float64. */
function baseInv(theta: number, d: number, n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = 1 / Math.pow(theta, (2 * i) / d);
  return out;
}

/** Inverse frequencies and attention factor of `spec` under `regime` (or the regime of a total length). */
export function ropeFrequencies(spec: RopeSpecData, regime?: RopeRegime | number): RopeFrequencies {
  const r = resolveRegime(spec, regime, 'ropeFrequencies');
  const s = spec.scaling;
  const d = spec.rotaryDim;
  const half = spec.tableDim / 2;
  let inv: Float64Array;
  switch (s.type) {
    case 'default':
      inv = baseInv(spec.theta, d, half);
      break;
    case 'linear':
      inv = baseInv(spec.theta, d, half).map((w) => w / s.factor);
      break;
    case 'dynamic': {
      const seqLen = r.seqLen ?? s.originalMaxPositionEmbeddings;
      const base =
        spec.theta * Math.pow((s.factor * seqLen) / s.originalMaxPositionEmbeddings - (s.factor - 1), d / (d - 2));
      inv = baseInv(base, d, half);
      break;
    }
    case 'yarn': {
      // Correction range in pair units: the pairs that turn more than betaFast times over L₀ keep their
      // frequency (extrapolation), those turning fewer than betaSlow times are divided by factor
      // (interpolation), with a linear ramp in between.
      const corrDim = (rot: number): number =>
        (d * Math.log(s.originalMaxPositionEmbeddings / (rot * 2 * Math.PI))) / (2 * Math.log(spec.theta));
      let low = corrDim(s.betaFast);
      let high = corrDim(s.betaSlow);
      if (s.truncate) {
        low = Math.floor(low);
        high = Math.ceil(high);
      }
      low = Math.max(low, 0);
      high = Math.min(high, d - 1);
      if (low === high) high += 0.001;
      const extrap = baseInv(spec.theta, d, half);
      inv = new Float64Array(half);
      for (let i = 0; i < half; i++) {
        const ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
        const extrapWeight = 1 - ramp;
        inv[i] = (extrap[i]! / s.factor) * (1 - extrapWeight) + extrap[i]! * extrapWeight;
      }
      break;
    }
    case 'llama3': {
      const base = baseInv(spec.theta, d, half);
      const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
      const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
      inv = new Float64Array(half);
      for (let i = 0; i < half; i++) {
        const w = base[i]!;
        const wavelen = (2 * Math.PI) / w;
        if (wavelen < highWavelen) inv[i] = w;
        else if (wavelen > lowWavelen) inv[i] = w / s.factor;
        else {
          const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
          inv[i] = (1 - smooth) * (w / s.factor) + smooth * w;
        }
      }
      break;
    }
    case 'longrope': {
      const f = r.table === 'long' ? s.longFactor : s.shortFactor;
      inv = new Float64Array(half);
      for (let i = 0; i < half; i++) inv[i] = 1 / (f[i]! * Math.pow(spec.theta, (2 * i) / d));
      break;
    }
    case 'proportional': {
      // Exponent over the FULL head dim; only the first rotatedPairs pairs turn.
      inv = new Float64Array(half);
      for (let i = 0; i < s.rotatedPairs; i++) inv[i] = 1 / Math.pow(spec.theta, (2 * i) / spec.headDim) / s.factor;
      break;
    }
  }
  if (spec.positionScale !== 1) for (let i = 0; i < half; i++) inv[i] = inv[i]! * spec.positionScale;
  return { invFreq: inv, attentionScale: r.scale, regime: r };
}
