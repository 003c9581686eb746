/**
 * Waveform -> audio soft tokens in the text embedding space: the multimodal entry point that the
 * Gemma model packages call (see README "Multimodal path").
 */
import { MlxcelError } from '@mlxcel/tensor';
import type { EncoderOutput } from './encoder-output.js';
import type { LocalWindow } from './conformer/window.js';
import { extractLogMel, type LogMelFeatures } from './mel/extract.js';
import type { AudioModel } from './model.js';
import { resample } from './resample.js';
import { audioTokenCount } from './tokens.js';

export interface AudioSoftTokens {
  /** [nTokens, hidden] rows for the placeholder positions, in order. */
  embeds: Float32Array;
  nTokens: number;
  /** Text hidden size (row width). */
  hidden: number;
  /** Rows that come from valid audio frames (Gemma 3n fills the rest with its padding embedding). */
  nAudioRows: number;
}

export interface AudioInputOptions {
  /** Sample rate of `waveform` when it is not the model's (16 kHz); it is resampled first. */
  sampleRate?: number;
  /** Test/analysis hook: a different local-attention window than the model's own. */
  window?: LocalWindow;
}

export interface EncodedAudio {
  features: LogMelFeatures;
  encoder: EncoderOutput;
  /** Samples of the clip at the model rate (after resampling, before truncation). */
  nSamples: number;
}

function toModelRate(model: AudioModel, waveform: Float32Array, opts: AudioInputOptions): Float32Array {
  if (!(waveform instanceof Float32Array)) throw new MlxcelError('E_ARG', 'audio: waveform must be a mono Float32Array');
  const sr = opts.sampleRate ?? model.mel.sampleRate;
  return sr === model.mel.sampleRate ? waveform : resample(waveform, sr, model.mel.sampleRate);
}

/** Features and encoder output of one clip (the stages audioSoftTokens runs, for tests and tracing). */
export function encodeAudio(model: AudioModel, waveform: Float32Array, opts: AudioInputOptions = {}): EncodedAudio {
  const x = toModelRate(model, waveform, opts);
  const features = extractLogMel(x, model.mel);
  const encoder = model.encoder.forward(features.features, features.mask, { window: opts.window });
  return { features, encoder, nSamples: x.length };
}

/**
 * One clip's soft tokens. Gemma 4: one row per valid encoder frame (invalid frames stripped), and the
 * count must equal the processor's formula (gemma4AudioTokenCount) or this throws. Gemma 3n: always
 * audio_soft_tokens_per_image rows; invalid frames and the tail are the padding embedding (the hard
 * embedding of id text vocab_size - 1).
 */
export function audioSoftTokens(model: AudioModel, waveform: Float32Array, opts: AudioInputOptions = {}): AudioSoftTokens {
  const { encoder: out, nSamples } = encodeAudio(model, waveform, opts);
  const H = model.textHidden;
  if (model.family === 'gemma4') {
    const all = model.embedder.forward(out.hidden, out.frames);
    let n = 0;
    for (let t = 0; t < out.frames; t++) if (out.mask[t]) n++;
    const embeds = new Float32Array(n * H);
    for (let t = 0, k = 0; t < out.frames; t++) if (out.mask[t]) embeds.set(all.subarray(t * H, (t + 1) * H), H * k++);
    const expect = audioTokenCount(model, nSamples);
    if (n !== expect)
      throw new MlxcelError('E_AUDIO_TOKENS', `Gemma 4 audio: the encoder produced ${n} valid frames but the prompt formula gives ${expect} placeholders for ${nSamples} samples`);
    return { embeds, nTokens: n, hidden: H, nAudioRows: n };
  }
  const total = model.config.softTokens;
  if (out.frames > total)
    throw new MlxcelError('E_AUDIO_TOKENS', `Gemma 3n audio: ${out.frames} encoder frames exceed audio_soft_tokens_per_image ${total}`);
  const soft = model.embedder.soft(out.hidden, out.frames);
  const pad = model.embedder.hard([model.config.textVocabSize - 1]);
  const embeds = new Float32Array(total * H);
  for (let t = 0; t < total; t++) embeds.set(t < out.frames && out.mask[t] ? soft.subarray(t * H, (t + 1) * H) : pad, t * H);
  let nValid = 0;
  for (let t = 0; t < out.frames; t++) if (out.mask[t]) nValid++;
  return { embeds, nTokens: total, hidden: H, nAudioRows: nValid };
}
