/** --audio: WAV -> audio soft tokens spliced into the prompt (Gemma 3n / Gemma 4 audio models). */
import type { LoadedModel, GenerateOptions } from '@mlxcel/engine';
import { UsageError } from '../errors.js';

interface AudioCapable {
  audioPrompt?(waveformPath: string, prompt: string, loaded: LoadedModel, opts: GenerateOptions): Promise<{ ids: Int32Array; overrides: { rows: Int32Array; values: Float32Array } }>;
}

export async function audioPrompt(loaded: LoadedModel, file: string, prompt: string, opts: GenerateOptions) {
  const m = loaded.model as unknown as AudioCapable;
  if (typeof m.audioPrompt !== 'function')
    throw new UsageError(`--audio: model_type ${loaded.model.modelType} has no audio input (use a Gemma 3n / Gemma 4 checkpoint with an audio tower)`);
  return m.audioPrompt(file, prompt, loaded, opts);
}
