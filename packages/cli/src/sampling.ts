/**
 * Sampling flags shared by generate and chat. The values go through the engine's request mapper
 * (generateOptionsFromRequest), the same one the HTTP server uses, so a flag accepts what the matching
 * request field accepts and an unset flag leaves the engine's default (engine README, "Sampling options").
 */
import type { Command } from 'commander';
import { generateOptionsFromRequest, type GenerateOptions } from '@mlxcel/engine';
import { collect, int, logitBias, num } from './parse.js';
import { KV_CACHE_HELP, kvCacheFlag, kvCacheFor } from './kv-cache-flag.js';

/** The request field behind each sampling flag (flag names appear in the mapper's errors). */
const FLAG_OF_FIELD: Record<string, string> = {
  max_tokens: '--max-tokens', temperature: '--temp', top_p: '--top-p', top_k: '--top-k', min_p: '--min-p',
  repetition_penalty: '--repetition-penalty', presence_penalty: '--presence-penalty', frequency_penalty: '--frequency-penalty',
  seed: '--seed', stop: '--stop', logit_bias: '--logit-bias',
};

export function addSamplingFlags(cmd: Command): Command {
  return cmd
    .option('--max-tokens <n>', 'maximum tokens to generate (default 256)', int('--max-tokens', 0))
    .option('--temp <t>', 'temperature (default 0 = greedy)', num('--temp', 0))
    .option('--top-p <p>', 'nucleus sampling mass (default 1 = off)', num('--top-p', 0, 1))
    .option('--top-k <k>', 'keep the k most likely tokens (default 0 = off)', int('--top-k', 0))
    .option('--min-p <p>', 'drop tokens below min-p x p(max) (default 0 = off)', num('--min-p', 0, 1))
    .option('--repetition-penalty <r>', 'repetition penalty (default 1 = off)', num('--repetition-penalty', 1e-6))
    .option('--presence-penalty <p>', 'presence penalty in [-2, 2] (default 0)', num('--presence-penalty'))
    .option('--frequency-penalty <p>', 'frequency penalty in [-2, 2] (default 0)', num('--frequency-penalty'))
    .option('--logit-bias <list>', 'additive bias per id, e.g. 13=-5,29871=2', logitBias)
    .option('--seed <n>', 'random seed (same seed, same tokens)', int('--seed', 0, 2 ** 32 - 1))
    .option('--stop <text>', 'stop string (repeatable)', collect, [])
    .option('--kv-cache <kind>', KV_CACHE_HELP, kvCacheFlag)
    .option('--prefill-chunk <n>', 'prefill chunk size in tokens (0 = whole prompt)', int('--prefill-chunk', 0));
}

export function samplingOptions(o: Record<string, unknown>): GenerateOptions {
  const stop = o.stop as string[] | undefined;
  const sampling = generateOptionsFromRequest(
    {
      max_tokens: o.maxTokens, temperature: o.temp, top_p: o.topP, top_k: o.topK, min_p: o.minP,
      repetition_penalty: o.repetitionPenalty, presence_penalty: o.presencePenalty, frequency_penalty: o.frequencyPenalty,
      seed: o.seed, stop: stop && stop.length ? stop : undefined, logit_bias: o.logitBias,
    },
    (field) => FLAG_OF_FIELD[field] ?? field,
  );
  return { ...sampling, kvCache: kvCacheFor(o.kvCache), prefillChunk: o.prefillChunk as number | undefined };
}
