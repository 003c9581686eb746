/**
 * A validated OpenAI request -> engine sampling options. The field mapping is the engine's
 * `generateOptionsFromRequest` (the one the CLI's flags go through too, so both read a field the same
 * way); this file adds only what differs for an OpenAI server: OpenAI's defaults where the request
 * leaves a field out (temperature 1 rather than the engine's greedy 0; no max_tokens = until EOS or
 * the context is full rather than 256).
 */
import { generateOptionsFromRequest, type GenerateOptions } from '@mlxcel/engine';

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

/** `roomLeft`: context tokens after the prompt (the cap on, and default for, max_tokens). */
export function samplingOptions(body: SamplingFields, roomLeft: number): EngineSamplingOptions {
  const mapped = generateOptionsFromRequest(body as Record<string, unknown>);
  return {
    ...mapped,
    maxTokens: Math.min(mapped.maxTokens ?? roomLeft, roomLeft),
    temperature: mapped.temperature ?? 1,
    logitBias: mapped.logitBias as Record<number, number> | undefined,
  };
}
