/**
 * Audio input (Gemma 3n / Gemma 4 checkpoints with an audio tower): WAV -> soft tokens spliced into
 * the chat prompt, and the audio part of `mlxcel trace --waveform`.
 */
import {
  audioEmbeddingOverrides, audioPromptIds, audioSoftTokens, encodeAudio, loadAudio, loadAudioModel,
  renderAudioChatPrompt, withAudioInLastUserTurn, type AudioModel, type AudioSoftTokens,
} from '@mlxcel/audio';
import { Tensor } from '@mlxcel/tensor';
import { buildPrompt, type ChatMessage } from './chat/index.js';
import { MlxcelError } from './errors.js';
import type { LoadedModel } from './load.js';

const towers = new WeakMap<LoadedModel, AudioModel>();

/** The checkpoint's audio tower (loaded once per model); a clear error when it has none. */
export function audioModelOf(loaded: LoadedModel): AudioModel {
  let m = towers.get(loaded);
  if (m) return m;
  const cfg = loaded.config;
  if (!cfg.audio_config)
    throw new MlxcelError('AUDIO_UNSUPPORTED', `${loaded.dir}: model_type ${String(cfg.model_type)} has no audio tower (no audio_config in config.json); audio input needs a Gemma 3n / Gemma 4 checkpoint with one`);
  m = loadAudioModel(loaded.dir);
  towers.set(loaded, m);
  return m;
}

export interface AudioPrompt {
  ids: Int32Array;
  overrides: { rows: Int32Array; values: Float32Array };
  /** Soft tokens inserted for the clip. */
  audioTokens: number;
}

/**
 * A user turn with one audio clip: the placeholder goes inside the last user turn, is expanded to the
 * model's token count, and the soft-token embeddings replace those rows.
 */
export function audioPrompt(loaded: LoadedModel, wav: string | Uint8Array, text: string, opts: { system?: string } = {}): AudioPrompt {
  const model = audioModelOf(loaded);
  if (!loaded.tokenizer) throw new MlxcelError('TOKENIZER_MISSING', `${loaded.dir} has no tokenizer; audio prompts need one`);
  const tokenizer = loaded.tokenizer;
  const { samples } = loadAudio(wav);
  const soft = audioSoftTokens(model, samples);
  const messages: ChatMessage[] = [...(opts.system ? [{ role: 'system' as const, content: opts.system }] : []), { role: 'user', content: text }];
  const rendered = loaded.chatTemplate
    ? buildPrompt(tokenizer, withAudioInLastUserTurn(messages as never) as never, { template: loaded.chatTemplate }).text
    : renderAudioChatPrompt(model, messages as never);
  const { ids } = audioPromptIds(model, rendered, [soft.nTokens], (t) => tokenizer.encode(t, { addSpecialTokens: false }));
  return { ids, overrides: audioEmbeddingOverrides(model, ids, [soft]), audioTokens: soft.nTokens };
}

/** One clip's soft tokens: the WAV decoded, resampled to 16 kHz and run through the audio tower. */
export function audioClip(loaded: LoadedModel, wav: string | Uint8Array): AudioSoftTokens {
  const model = audioModelOf(loaded);
  return audioSoftTokens(model, loadAudio(wav).samples);
}

/**
 * A conversation whose messages carry `{type: 'audio'}` content parts (anywhere, several allowed):
 * the template renders one placeholder per part, each is expanded to its clip's token count (clips
 * in part order) and the clips' soft tokens replace those rows. Needs the model's chat template.
 */
export function audioChatPrompt(loaded: LoadedModel, messages: readonly ChatMessage[], clips: readonly AudioSoftTokens[]): AudioPrompt {
  const model = audioModelOf(loaded);
  if (!loaded.tokenizer) throw new MlxcelError('TOKENIZER_MISSING', `${loaded.dir} has no tokenizer; audio prompts need one`);
  if (!loaded.chatTemplate) throw new MlxcelError('CHAT_TEMPLATE_MISSING', `${loaded.dir} has no chat template; audio in chat messages needs one`);
  const tokenizer = loaded.tokenizer;
  const parts = messages.reduce((n, m) => n + (Array.isArray(m.content) ? (m.content as readonly { type: string }[]).filter((p) => p.type === 'audio').length : 0), 0);
  if (parts !== clips.length) throw new MlxcelError('BAD_INPUT', `audioChatPrompt: ${parts} audio part(s) but ${clips.length} clip(s)`);
  const rendered = buildPrompt(tokenizer, messages, { template: loaded.chatTemplate }).text;
  const { ids } = audioPromptIds(model, rendered, clips.map((c) => c.nTokens), (t) => tokenizer.encode(t, { addSpecialTokens: false }));
  return { ids, overrides: audioEmbeddingOverrides(model, ids, clips), audioTokens: clips.reduce((a, c) => a + c.nTokens, 0) };
}

/** The audio tensors of a trace: features, encoder output and the embeddings in text space. */
export function traceAudio(loaded: LoadedModel, waveform: Float32Array): Record<string, Tensor> {
  const model = audioModelOf(loaded);
  const { features, encoder } = encodeAudio(model, waveform);
  const H = model.textHidden;
  const embeds = model.family === 'gemma4' ? model.embedder.forward(encoder.hidden, encoder.frames) : model.embedder.soft(encoder.hidden, encoder.frames);
  return {
    input_features: Tensor.fromF32(features.features, [features.nFrames, features.nMel]),
    input_features_mask: Tensor.fromI32(Int32Array.from(features.mask), [features.nFrames]),
    audio_sscp_output: Tensor.fromF32(encoder.sscp, [encoder.sscpFrames, encoder.sscp.length / encoder.sscpFrames]),
    audio_encoder_output: Tensor.fromF32(encoder.hidden, [encoder.frames, encoder.dim]),
    audio_output_mask: Tensor.fromI32(Int32Array.from(encoder.mask), [encoder.frames]),
    audio_embeds: Tensor.fromF32(embeds, [encoder.frames, H]),
  };
}
