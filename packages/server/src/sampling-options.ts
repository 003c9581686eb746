/**
 * The one place a validated OpenAI request becomes engine sampling options. The request has already
 * passed the JSON schema (types and ranges); the mapping itself is the engine's, shared with the CLI.
 */
import { generateOptionsFromRequest, RequestFieldError, type GenerateOptions } from '@mlxcel/engine';
import { ApiError } from './errors.js';

/** The structured-clone-safe part of GenerateOptions a request sets (sent to the engine worker). */
export type EngineSamplingOptions = Pick<
  GenerateOptions,
  'maxTokens' | 'temperature' | 'topP' | 'topK' | 'minP' | 'presencePenalty' | 'frequencyPenalty' | 'repetitionPenalty' | 'seed' | 'stop'
> & { logitBias?: Record<number, number> };

/** Sampling fields shared by chat and completions requests (after schema validation). */
export interface SamplingFields {
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  repetition_penalty?: number | null;
  seed?: number | null;
  stop?: string | string[] | null;
  logit_bias?: Record<string, number> | null;
}

/**
 * The engine's one request mapper (`generateOptionsFromRequest`: the same fields, ranges and defaults as
 * the CLI's sampling flags — temperature 0 = greedy when unset; engine README, "Sampling options from a
 * request"). The server adds one rule of its own: no max_tokens means "until EOS or the context is
 * full" (`roomLeft`, the room after the prompt).
 */
export function samplingOptions(body: SamplingFields, roomLeft: number): EngineSamplingOptions {
  let o: GenerateOptions;
  try {
    o = generateOptionsFromRequest(body as Readonly<Record<string, unknown>>);
  } catch (e) {
    // The JSON schema admits a subset of the mapper's ranges, so this is a client mistake the schema missed: 400.
    if (e instanceof RequestFieldError) throw new ApiError(400, e.message, { param: e.field.replace(/"/g, ''), code: 'invalid_value' });
    throw e;
  }
  return {
    ...o,
    maxTokens: Math.min(o.maxTokens ?? roomLeft, roomLeft),
    stop: o.stop ?? [],
    logitBias: o.logitBias as Record<number, number> | undefined,
  };
}
