import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { maxAbsDiff, openExpected, relMaxDiff, type ExpectedTensors } from '@mlxcel/tensor';
import { expect } from 'vitest';
import { encodeAudio, type AudioModel } from '../src/index.js';


const here = dirname(fileURLToPath(import.meta.url));
/** Fixtures are copied into the repo (docs/architecture/README.md, "Conventions": tests read nothing outside the repository). */
export const FIXTURES = resolve(here, '../../../fixtures');

/** The expected tensors of fixture `name` (fixtures/<name>/expected.safetensors). */
export function expected(name: string): ExpectedTensors {
  return openExpected(join(FIXTURES, name));
}

/** The checks every audio fixture shares: features, subsampler and encoder outputs and their masks. */
export function expectEncoderMatchesFixture(model: AudioModel, e: ExpectedTensors): void {
  const { features, encoder } = encodeAudio(model, e.f32('waveform'));
  expect(maxAbsDiff(features.features, e.f32('input_features'))).toBeLessThanOrEqual(1e-4);
  expect(Array.from(features.mask)).toEqual(Array.from(e.i32('input_features_mask')));
  expect([encoder.sscpFrames, model.config.hidden]).toEqual([...e.shape('audio_sscp_output')]);
  expect(relMaxDiff(encoder.sscp, e.f32('audio_sscp_output'))).toBeLessThanOrEqual(1e-3);
  expect([encoder.frames, encoder.dim]).toEqual([...e.shape('audio_encoder_output')]);
  expect(relMaxDiff(encoder.hidden, e.f32('audio_encoder_output'))).toBeLessThanOrEqual(1e-3);
  expect(Array.from(encoder.mask)).toEqual(Array.from(e.i32('audio_output_mask')));
}
