/** --audio: WAV -> audio soft tokens spliced into the prompt (Gemma 3n / Gemma 4 audio models). */
import { audioPrompt as buildAudioPrompt, type LoadedModel } from '@mlxcel/engine';

export async function audioPrompt(loaded: LoadedModel, file: string, prompt: string, opts: { system?: string }) {
  const p = buildAudioPrompt(loaded, file, prompt, opts);
  return { ids: p.ids, overrides: p.overrides };
}
