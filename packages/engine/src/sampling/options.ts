import { MlxcelError } from '../errors.js';

/**
 * Sampling settings. Defaults are mlx-lm's CLI defaults: greedy (temperature 0), every
 * filter and penalty off.
 */
export interface SamplerOptions {
  /** 0 = greedy argmax (no filters). Default 0. */
  temperature?: number;
  /** Nucleus sampling; active only when 0 < topP < 1. Default 1 (off). */
  topP?: number;
  /** Min-p: drop tokens with p < minP · p_max; active when > 0. Default 0 (off). */
  minP?: number;
  /** Min-p never removes the this-many most probable tokens. Default 1. */
  minTokensToKeep?: number;
  /** Keep only the k most probable tokens; active when 0 < k < vocab. Default 0 (off). */
  topK?: number;
  /**
   * XTC ("exclude top choices"): with this probability per step, remove every token whose
   * probability exceeds `xtcThreshold` except the least probable of them. Default 0 (off).
   */
  xtcProbability?: number;
  /** XTC threshold in [0, 0.5]. Default 0.1. */
  xtcThreshold?: number;
  /** Ids XTC never removes (mlx-lm's CLI passes the newline id and the EOS ids). */
  xtcSpecialIds?: Iterable<number>;
  /** Repetition penalty ρ > 0 (1 = off): z ← z·ρ if z < 0 else z/ρ, once per distinct token. */
  repetitionPenalty?: number;
  /**
   * Window of the repetition penalty: the last N tokens of the history. `undefined`
   * (default) = the whole history, as Hugging Face does (prompt + generated tokens).
   * mlx-lm uses 20 here (and starts its history at the last prompt token).
   */
  repetitionContextSize?: number;
  /** Presence penalty π: z −= π once per distinct token in the window. Default 0. */
  presencePenalty?: number;
  /** Window of the presence penalty (last N tokens); default: the whole history. */
  presenceContextSize?: number;
  /** Frequency penalty φ: z −= φ·count in the window. Default 0. */
  frequencyPenalty?: number;
  /** Window of the frequency penalty (last N tokens); default: the whole history. */
  frequencyContextSize?: number;
  /** Additive logit bias per token id. */
  logitBias?: ReadonlyMap<number, number> | Readonly<Record<number, number>>;
  /** Ids that can never be produced (a model's dummy / padding ids): −∞ before everything else. */
  suppressedIds?: Iterable<number>;
  /** PRNG seed: same seed + same logits ⇒ same tokens. Default: a random seed. */
  seed?: number;
}

/** {@link SamplerOptions} with defaults filled in and values checked. */
export interface ResolvedSamplerOptions {
  temperature: number;
  topP: number;
  minP: number;
  minTokensToKeep: number;
  topK: number;
  xtcProbability: number;
  xtcThreshold: number;
  xtcSpecialIds: number[];
  repetitionPenalty: number;
  repetitionContextSize: number | undefined;
  presencePenalty: number;
  presenceContextSize: number | undefined;
  frequencyPenalty: number;
  frequencyContextSize: number | undefined;
  logitBias: Array<[number, number]>;
  suppressedIds: number[];
  seed: number | undefined;
}

function fail(field: string, rule: string, value: unknown): never {
  throw new MlxcelError('SAMPLER_OPTION_INVALID', `sampler option ${field} ${rule}, got ${String(value)}`);
}

function num(field: string, value: number | undefined, fallback: number, ok: (v: number) => boolean, rule: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || !ok(value)) fail(field, rule, value);
  return value;
}

function windowSize(field: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value <= 0) fail(field, 'must be a positive integer', value);
  return value;
}

function ids(field: string, value: Iterable<number> | undefined): number[] {
  const out: number[] = [];
  for (const id of value ?? []) {
    if (!Number.isInteger(id) || id < 0) fail(field, 'must hold non-negative integer ids', id);
    out.push(id);
  }
  return out;
}

/** Fill defaults and validate; errors are `SAMPLER_OPTION_INVALID` naming the field. */
export function resolveSamplerOptions(options: SamplerOptions = {}): ResolvedSamplerOptions {
  const bias: Array<[number, number]> = [];
  const rawBias = options.logitBias;
  if (rawBias !== undefined) {
    const entries: Array<[number | string, number]> = rawBias instanceof Map ? [...rawBias.entries()] : Object.entries(rawBias);
    for (const [k, v] of entries) {
      const id = Number(k);
      if (!Number.isInteger(id) || id < 0) fail('logitBias', 'keys must be non-negative integer ids', k);
      if (typeof v !== 'number' || Number.isNaN(v)) fail(`logitBias[${id}]`, 'must be a number', v);
      bias.push([id, v]);
    }
  }
  const seed = options.seed;
  if (seed !== undefined && (!Number.isFinite(seed) || !Number.isInteger(seed))) fail('seed', 'must be an integer', seed);
  return {
    temperature: num('temperature', options.temperature, 0, (v) => v >= 0, 'must be ≥ 0'),
    topP: num('topP', options.topP, 1, (v) => v >= 0 && v <= 1, 'must be in [0, 1]'),
    minP: num('minP', options.minP, 0, (v) => v >= 0 && v <= 1, 'must be in [0, 1]'),
    minTokensToKeep: num('minTokensToKeep', options.minTokensToKeep, 1, (v) => Number.isInteger(v) && v >= 1, 'must be an integer ≥ 1'),
    topK: num('topK', options.topK, 0, (v) => Number.isInteger(v) && v >= 0, 'must be an integer ≥ 0'),
    xtcProbability: num('xtcProbability', options.xtcProbability, 0, (v) => v >= 0 && v <= 1, 'must be in [0, 1]'),
    xtcThreshold: num('xtcThreshold', options.xtcThreshold, 0.1, (v) => v >= 0 && v <= 0.5, 'must be in [0, 0.5]'),
    xtcSpecialIds: ids('xtcSpecialIds', options.xtcSpecialIds),
    repetitionPenalty: num('repetitionPenalty', options.repetitionPenalty, 1, (v) => v > 0, 'must be > 0'),
    repetitionContextSize: windowSize('repetitionContextSize', options.repetitionContextSize),
    presencePenalty: num('presencePenalty', options.presencePenalty, 0, () => true, 'must be finite'),
    presenceContextSize: windowSize('presenceContextSize', options.presenceContextSize),
    frequencyPenalty: num('frequencyPenalty', options.frequencyPenalty, 0, () => true, 'must be finite'),
    frequencyContextSize: windowSize('frequencyContextSize', options.frequencyContextSize),
    logitBias: bias,
    suppressedIds: ids('suppressedIds', options.suppressedIds),
    seed,
  };
}
