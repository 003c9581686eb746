/** `mlxcel trace --waveform` reproduces the audio fixtures. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SafetensorsFile } from '@mlxcel/tensor';
import { FIXTURES, mlxcel } from './helpers.js';

function relMax(got: Float32Array, want: Float32Array): number {
  expect(got.length).toBe(want.length);
  let d = 0, m = 0;
  for (let i = 0; i < got.length; i++) { d = Math.max(d, Math.abs(got[i]! - want[i]!)); m = Math.max(m, Math.abs(want[i]!)); }
  return d / m;
}

describe('mlxcel trace --waveform', () => {
  const out = mkdtempSync(join(tmpdir(), 'mlxcel-audio-'));
  for (const name of ['gemma4-audio-tiny', 'gemma3n-audio-tiny']) {
    it(name, async () => {
      const dir = join(FIXTURES, name);
      const file = join(out, `${name}.safetensors`);
      const r = await mlxcel(['trace', '--model', dir, '--waveform', join(dir, 'expected.safetensors'), '--out', file]);
      expect(r.stderr).toContain('wrote');
      expect(r.code).toBe(0);
      const got = SafetensorsFile.open(file), want = SafetensorsFile.open(join(dir, 'expected.safetensors'));
      const f = got.get('input_features').toF32(), wf = want.get('input_features').toF32();
      let md = 0;
      for (let i = 0; i < wf.length; i++) md = Math.max(md, Math.abs(f[i]! - wf[i]!));
      expect(md).toBeLessThanOrEqual(1e-4);
      for (const t of ['audio_encoder_output', 'audio_embeds', 'audio_sscp_output'])
        expect(relMax(got.get(t).toF32(), want.get(t).toF32()), t).toBeLessThanOrEqual(1e-3);
      expect(Array.from(got.get('audio_output_mask').toI32())).toEqual(Array.from(want.get('audio_output_mask').toI32()));
    });
  }

  it('a model without an audio tower says so', async () => {
    const dir = join(FIXTURES, 'phi3-tiny-short');
    const r = await mlxcel(['trace', '--model', dir, '--waveform', join(FIXTURES, 'gemma4-audio-tiny', 'expected.safetensors'), '--out', join(out, 'x.safetensors')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/no audio tower/);
  });
});
