import { readFileSync } from 'node:fs';
import { Checkpoint, MemoryWeights, relMaxDiff, Tensor, type ExpectedTensors as Expected } from '@mlxcel/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { audioModelFrom, audioSoftTokens, encodeAudio, extractLogMel, gemma4AudioTokenCount, inclusiveWindow, loadAudioModel, type AudioModel } from '../src/index.js';
import { expectEncoderMatchesFixture, expected } from './helpers.js';

describe('gemma4-audio-tiny', () => {
  let model: AudioModel;
  let e: Expected;
  beforeAll(() => {
    e = expected('gemma4-audio-tiny');
    model = loadAudioModel(e.dir);
  });

  it('features, subsampler, encoder and mask match the reference from the waveform', () => {
    expectEncoderMatchesFixture(model, e);
  });

  it('audioSoftTokens gives the reference embeddings with the formula token count', () => {
    const wave = e.f32('waveform');
    const soft = audioSoftTokens(model, wave);
    expect(soft.nTokens).toBe(gemma4AudioTokenCount(wave.length));
    expect([soft.nTokens, soft.hidden]).toEqual([...e.shape('audio_embeds')]);
    expect(relMaxDiff(soft.embeds, e.f32('audio_embeds'))).toBeLessThanOrEqual(1e-3);
  });

  it('the old inclusive mask (admitting dist == max_past) fails the fixture; the fixed rule passes', () => {
    const wave = e.f32('waveform');
    const ref = e.f32('audio_encoder_output');
    const fixed = encodeAudio(model, wave).encoder;
    expect(model.encoder.window).toEqual({ maxPast: 11, maxFuture: 0 });
    expect(relMaxDiff(fixed.hidden, ref)).toBeLessThanOrEqual(1e-3);
    const old = encodeAudio(model, wave, { window: inclusiveWindow(13, 0) }).encoder;
    expect(relMaxDiff(old.hidden, ref)).toBeGreaterThan(1e-2);
  });

  it('a right-padded clip gives the same valid frames (the mask zeroes padding before every conv)', () => {
    const wave = e.f32('waveform').subarray(0, 12345);
    const base = encodeAudio(model, wave).encoder;
    // Pad as a batch with a longer clip would: the padded run must not change valid outputs.
    const feats = encodeAudio(model, wave).features;
    const padded = extractLogMel(wave, model.mel, { padToLength: 20000 });
    expect(padded.nFrames).toBeGreaterThan(feats.nFrames);
    const out = model.encoder.forward(padded.features, padded.mask);
    const D = out.dim;
    let n = 0;
    for (let t = 0; t < base.frames; t++) if (base.mask[t]) n++;
    expect(n).toBe(gemma4AudioTokenCount(wave.length));
    expect(relMaxDiff(out.hidden.subarray(0, n * D), base.hidden.subarray(0, n * D))).toBeLessThanOrEqual(1e-5);
    expect(Array.from(out.mask.subarray(0, n))).toEqual(new Array(n).fill(1));
    expect(out.mask[n]).toBe(0);
  });
});

describe('mlx-vlm layout', () => {
  it('audio_tower.* names with channels-last conv kernels load to the same encoder', () => {
    const e = expected('gemma4-audio-tiny');
    const hf = Checkpoint.open(e.dir);
    const mem = new MemoryWeights();
    for (const k of hf.keys()) {
      let t = hf.get(k);
      if (k.endsWith('conv.weight') && t.shape.length === 4) {
        // [out, in, kh, kw] -> [out, kh, kw, in]
        const [o, i, kh, kw] = t.shape as [number, number, number, number];
        const src = t.toF32(), dst = new Float32Array(src.length);
        for (let a = 0; a < o; a++) for (let b = 0; b < i; b++) for (let y = 0; y < kh; y++) for (let x = 0; x < kw; x++)
          dst[((a * kh + y) * kw + x) * i + b] = src[((a * i + b) * kh + y) * kw + x]!;
        t = Tensor.fromF32(dst, [o, kh, kw, i]);
      } else if (k.endsWith('depthwise_conv1d.weight')) {
        t = t.reshape([t.shape[0]!, t.shape[2]!, 1]);
      }
      mem.set(k.replace(/^model\.(audio_tower|embed_audio)\./, '$1.'), t);
    }
    const config = JSON.parse(readFileSync(`${e.dir}/config.json`, 'utf8'));
    const m = audioModelFrom({ config, weights: mem });
    const out = encodeAudio(m, e.f32('waveform')).encoder;
    expect(relMaxDiff(out.hidden, e.f32('audio_encoder_output'))).toBeLessThanOrEqual(1e-3);
    expect(relMaxDiff(audioSoftTokens(m, e.f32('waveform')).embeds, e.f32('audio_embeds'))).toBeLessThanOrEqual(1e-3);
  });

  it('a checkpoint without an audio tower is rejected by name', () => {
    const e = expected('gemma4-audio-tiny');
    const config = JSON.parse(readFileSync(`${e.dir}/config.json`, 'utf8'));
    expect(() => audioModelFrom({ config, weights: new MemoryWeights(), name: 'text-only' })).toThrow(/text-only: no audio tower tensors \(looked for model\.audio_tower\.\*, audio_tower\.\*\)/);
    expect(() => audioModelFrom({ config: { ...config, audio_config: null }, weights: new MemoryWeights() })).toThrow(/no audio_config/);
  });
});
