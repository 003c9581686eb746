import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SafetensorsFile } from '@mlxcel/tensor';
import { expect } from 'vitest';
import { encodeAudio, type AudioModel } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
/** Fixtures are copied into the repo (docs/architecture/README.md, "Conventions": tests read nothing outside the repository). */
export const FIXTURES = resolve(here, '../../../fixtures');

export interface Expected {
  dir: string;
  f32(name: string): Float32Array;
  i32(name: string): Int32Array;
  shape(name: string): readonly number[];
}

export function expected(name: string): Expected {
  const dir = join(FIXTURES, name);
  const file = SafetensorsFile.open(join(dir, 'expected.safetensors'));
  return {
    dir,
    f32: (n) => file.get(n).toF32(),
    i32: (n) => file.get(n).toI32(),
    shape: (n) => file.get(n).shape,
  };
}

/** max |a - b| (arrays of equal length). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** max |a - b| / max |b|: the fixtures' tolerance for encoder outputs. */
export function relMaxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let scale = 0;
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]!));
  return maxAbsDiff(a, b) / scale;
}

/** The checks every audio fixture shares: features, subsampler and encoder outputs and their masks. */
export function expectEncoderMatchesFixture(model: AudioModel, e: Expected): void {
  const { features, encoder } = encodeAudio(model, e.f32('waveform'));
  expect(maxAbsDiff(features.features, e.f32('input_features'))).toBeLessThanOrEqual(1e-4);
  expect(Array.from(features.mask)).toEqual(Array.from(e.i32('input_features_mask')));
  expect([encoder.sscpFrames, model.config.hidden]).toEqual([...e.shape('audio_sscp_output')]);
  expect(relMaxDiff(encoder.sscp, e.f32('audio_sscp_output'))).toBeLessThanOrEqual(1e-3);
  expect([encoder.frames, encoder.dim]).toEqual([...e.shape('audio_encoder_output')]);
  expect(relMaxDiff(encoder.hidden, e.f32('audio_encoder_output'))).toBeLessThanOrEqual(1e-3);
  expect(Array.from(encoder.mask)).toEqual(Array.from(e.i32('audio_output_mask')));
}
