/** How many audio soft tokens a clip takes in the prompt (docs/architecture/audio.md §4.6, docs/architecture/gemma3n.md §12). */
import { MlxcelError } from '@mlxcel/tensor';
import type { AudioModel } from './model.js';

/**
 * Gemma 4 (HF `_compute_audio_num_tokens`, normative): valid mel frames
 * M = floor((n + FL/2 - (FL + 1)) / hop) + 1 (0 if <= 0), then two stride-2 convs
 * M <- floor((M + 2 - 3) / 2) + 1, capped at `cap` (audio_seq_length = 750). 1 s -> 25, 30 s -> 750.
 */
export function gemma4AudioTokenCount(nSamples: number, opts: { frameLength?: number; hop?: number; cap?: number } = {}): number {
  if (!Number.isInteger(nSamples) || nSamples < 0) throw new MlxcelError('E_ARG', `gemma4AudioTokenCount: nSamples must be a non-negative integer, got ${nSamples}`);
  const FL = opts.frameLength ?? 320, hop = opts.hop ?? 160, cap = opts.cap ?? 750;
  let t = Math.floor((nSamples + Math.floor(FL / 2) - (FL + 1)) / hop) + 1;
  if (t <= 0) return 0;
  for (let i = 0; i < 2; i++) t = Math.floor((t + 2 - 3) / 2) + 1;
  return Math.min(t, cap);
}

/** Placeholder count of one clip of `nSamples` samples (at the model's sample rate). */
export function audioTokenCount(model: AudioModel, nSamples: number): number {
  if (model.family === 'gemma3n') return model.config.softTokens; // always padded to this many
  return gemma4AudioTokenCount(nSamples, { frameLength: model.mel.frameLength, hop: model.mel.hop, cap: model.config.maxTokens });
}
