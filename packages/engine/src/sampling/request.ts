/**
 * THE mapper from a client's request fields to generate() options, used by the CLI (`generate`, `chat`
 * flags) and the HTTP server (OpenAI request bodies) alike, so both accept the same values and leave
 * the same defaults: a field that is absent or null stays unset, and the engine's one set of
 * defaults applies (SamplerOptions: temperature 0 = greedy, top_p 1, top_k 0, min_p 0, penalties
 * off; maxTokens 256; no stop strings — engine README, "Sampling options").
 *
 * Field names are the OpenAI ones (`max_tokens`, `top_p`, ...). A value of the wrong type or out of
 * range throws RequestFieldError naming the field (or, through `label`, the CLI flag it came from).
 */
import { MlxcelError } from '../errors.js';
import type { GenerateOptions } from '../types.js';

/** The request fields the mapper reads (all optional; null = absent). */
export interface SamplingRequest {
  max_tokens?: number | null;
  /** OpenAI's newer name for max_tokens; wins when both are set. */
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  repetition_penalty?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  seed?: number | null;
  stop?: string | string[] | null;
  /** Token id (as a string or number key) → additive bias. */
  logit_bias?: Record<string, number> | null;
}

/** A request field the mapper rejects; `field` is its name as the client spelt it. */
export class RequestFieldError extends MlxcelError {
  constructor(readonly field: string, message: string) {
    super('REQUEST_FIELD_INVALID', `${field} ${message}`);
    this.name = 'RequestFieldError';
  }
}

/** The accepted range of every numeric field: [min, max], integer or not. */
export const SAMPLING_FIELD_RULES = {
  max_tokens: { min: 0, max: 1e7, integer: true },
  max_completion_tokens: { min: 0, max: 1e7, integer: true },
  temperature: { min: 0, max: 100, integer: false },
  top_p: { min: 0, max: 1, integer: false },
  top_k: { min: 0, max: 1e9, integer: true },
  min_p: { min: 0, max: 1, integer: false },
  repetition_penalty: { min: 1e-6, max: 100, integer: false },
  presence_penalty: { min: -2, max: 2, integer: false },
  frequency_penalty: { min: -2, max: 2, integer: false },
  seed: { min: 0, max: 2 ** 32 - 1, integer: true },
} as const;

type NumericField = keyof typeof SAMPLING_FIELD_RULES;

/**
 * Maps request fields onto GenerateOptions (unset fields stay undefined: the engine defaults apply).
 * `label` renames a field in error messages (the CLI passes its flag names: `--top-p`).
 */
export function generateOptionsFromRequest(req: Readonly<Record<string, unknown>>, label: (field: string) => string = (f) => `"${f}"`): GenerateOptions {
  const num = (field: NumericField): number | undefined => {
    const v = req[field];
    if (v === undefined || v === null) return undefined;
    const r = SAMPLING_FIELD_RULES[field];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < r.min || v > r.max || (r.integer && !Number.isInteger(v)))
      throw new RequestFieldError(label(field), `must be ${r.integer ? 'an integer' : 'a number'} in [${r.min}, ${r.max}], got ${JSON.stringify(v)}`);
    return v;
  };
  const stop = req.stop;
  if (stop !== undefined && stop !== null && typeof stop !== 'string' && !(Array.isArray(stop) && stop.every((s) => typeof s === 'string')))
    throw new RequestFieldError(label('stop'), 'must be a string or a list of strings');
  const bias = req.logit_bias;
  let logitBias: Record<number, number> | undefined;
  if (bias !== undefined && bias !== null) {
    if (typeof bias !== 'object' || Array.isArray(bias)) throw new RequestFieldError(label('logit_bias'), 'must be an object of token id -> bias');
    logitBias = {};
    for (const [k, v] of Object.entries(bias as Record<string, unknown>)) {
      const id = Number(k);
      if (!Number.isInteger(id) || id < 0) throw new RequestFieldError(label('logit_bias'), `keys must be non-negative token ids, got ${JSON.stringify(k)}`);
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new RequestFieldError(label('logit_bias'), `[${k}] must be a finite number, got ${JSON.stringify(v)}`);
      logitBias[id] = v;
    }
  }
  const opts: GenerateOptions = {
    maxTokens: num('max_completion_tokens') ?? num('max_tokens'),
    temperature: num('temperature'),
    topP: num('top_p'),
    topK: num('top_k'),
    minP: num('min_p'),
    repetitionPenalty: num('repetition_penalty'),
    presencePenalty: num('presence_penalty'),
    frequencyPenalty: num('frequency_penalty'),
    seed: num('seed'),
    stop: stop === undefined || stop === null ? undefined : typeof stop === 'string' ? [stop] : (stop as string[]),
    logitBias,
  };
  // Unset fields are left out rather than undefined, so spreading the result never hides a default.
  for (const k of Object.keys(opts) as (keyof GenerateOptions)[]) if (opts[k] === undefined) delete opts[k];
  return opts;
}
