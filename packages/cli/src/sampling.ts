/** Sampling flags shared by generate and chat. */
import type { Command } from 'commander';
import type { GenerateOptions } from '@mlxcel/engine';
import { collect, int, logitBias, num } from './parse.js';

export function addSamplingFlags(cmd: Command): Command {
  return cmd
    .option('--max-tokens <n>', 'maximum tokens to generate', int('--max-tokens', 0), 256)
    .option('--temp <t>', 'temperature (0 = greedy)', num('--temp', 0), 0)
    .option('--top-p <p>', 'nucleus sampling mass (1 = off)', num('--top-p', 0, 1), 1)
    .option('--top-k <k>', 'keep the k most likely tokens (0 = off)', int('--top-k', 0), 0)
    .option('--min-p <p>', 'drop tokens below min-p x p(max) (0 = off)', num('--min-p', 0, 1), 0)
    .option('--repetition-penalty <r>', 'repetition penalty (1 = off)', num('--repetition-penalty', 1e-6), 1)
    .option('--presence-penalty <p>', 'presence penalty', num('--presence-penalty'), 0)
    .option('--frequency-penalty <p>', 'frequency penalty', num('--frequency-penalty'), 0)
    .option('--logit-bias <list>', 'additive bias per id, e.g. 13=-5,29871=2', logitBias)
    .option('--seed <n>', 'random seed (same seed, same tokens)', int('--seed', 0, 2 ** 32 - 1))
    .option('--stop <text>', 'stop string (repeatable)', collect, [])
    .option('--kv-cache <kind>', 'KV cache storage: f32 | f16 | bf16 | q8 | k8v4')
    .option('--prefill-chunk <n>', 'prefill chunk size in tokens (0 = whole prompt)', int('--prefill-chunk', 0));
}

export function samplingOptions(o: Record<string, unknown>): GenerateOptions {
  return {
    maxTokens: o.maxTokens as number,
    temperature: o.temp as number,
    topP: o.topP as number,
    topK: o.topK as number,
    minP: o.minP as number,
    repetitionPenalty: o.repetitionPenalty as number,
    presencePenalty: o.presencePenalty as number,
    frequencyPenalty: o.frequencyPenalty as number,
    logitBias: o.logitBias as Record<number, number> | undefined,
    seed: o.seed as number | undefined,
    stop: o.stop as string[],
    kvCache: o.kvCache as string | undefined,
    prefillChunk: o.prefillChunk as number | undefined,
  };
}
