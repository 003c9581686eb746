import { beforeAll, describe, expect, it } from 'vitest';
import { audioSoftTokens, encodeAudio, loadAudioModel, type AudioModel } from '../src/index.js';
import { relMaxDiff, type ExpectedTensors as Expected } from '@mlxcel/tensor';
import { expectEncoderMatchesFixture, expected } from './helpers.js';

describe('gemma3n-audio-tiny', () => {
  let model: AudioModel;
  let e: Expected;
  beforeAll(() => {
    e = expected('gemma3n-audio-tiny');
    model = loadAudioModel(e.dir);
  });

  it('features, subsampler, encoder and mask match the reference from the waveform', () => {
    expectEncoderMatchesFixture(model, e);
  });

  it('uses its own inclusive window (13 keys), and the Gemma 4 rule does not fit it', () => {
    expect(model.encoder.window).toEqual({ maxPast: 12, maxFuture: 0 });
    const ref = e.f32('audio_encoder_output');
    const other = encodeAudio(model, e.f32('waveform'), { window: { maxPast: 11, maxFuture: 0 } }).encoder;
    expect(relMaxDiff(other.hidden, ref)).toBeGreaterThan(1e-2);
  });

  it('audioSoftTokens: reference embeddings first, then the padding embedding up to 188 rows', () => {
    if (model.family !== 'gemma3n') throw new Error('expected a gemma3n model');
    const soft = audioSoftTokens(model, e.f32('waveform'));
    const [n, H] = e.shape('audio_embeds');
    expect(soft.nTokens).toBe(188);
    expect(soft.nAudioRows).toBe(n);
    expect(soft.hidden).toBe(H);
    expect(relMaxDiff(soft.embeds.subarray(0, n! * H!), e.f32('audio_embeds'))).toBeLessThanOrEqual(1e-3);
    const pad = model.embedder.hard([model.config.textVocabSize - 1]);
    for (const r of [n!, 100, 187]) expect(Array.from(soft.embeds.subarray(r * H!, (r + 1) * H!))).toEqual(Array.from(pad));
    // The padding row is the normalized hard embedding: RMS 1 after the weightless post-norm.
    const rms = Math.sqrt(pad.reduce((a, v) => a + v * v, 0) / H!);
    expect(rms).toBeCloseTo(1, 4);
  });
});
