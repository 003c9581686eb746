/**
 * The one place a validated OpenAI request becomes engine sampling options. The request has already
 * passed the JSON schema (types and ranges), so this only renames and fills defaults.
 */
import type { GenerateOptions } from '@mlxcel/engine';

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
 * OpenAI's defaults: temperature 1, top_p 1; no max_tokens means "until EOS or the context is full"
 * (`maxTokens` is then the room left after the prompt, filled in by the caller).
 */
export function samplingOptions(body: SamplingFields, roomLeft: number): EngineSamplingOptions {
  const stop = body.stop;
  const bias = body.logit_bias;
  return {
    maxTokens: Math.min(body.max_completion_tokens ?? body.max_tokens ?? roomLeft, roomLeft),
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: body.top_k ?? 0,
    minP: body.min_p ?? 0,
    presencePenalty: body.presence_penalty ?? 0,
    frequencyPenalty: body.frequency_penalty ?? 0,
    repetitionPenalty: body.repetition_penalty ?? 1,
    seed: body.seed ?? undefined,
    stop: stop == null ? [] : typeof stop === 'string' ? [stop] : stop,
    logitBias: bias ? Object.fromEntries(Object.entries(bias).map(([k, v]) => [Number(k), v])) : undefined,
  };
}
