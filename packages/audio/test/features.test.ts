import { describe, expect, it } from 'vitest';
import { extractLogMel } from '../src/mel/extract.js';
import { melConfig } from '../src/mel/config.js';
import { expected, maxAbsDiff } from './helpers.js';

describe.each([
  ['gemma4-audio-tiny', 'gemma4'],
  ['gemma3n-audio-tiny', 'gemma3n'],
] as const)('%s input_features', (name, family) => {
  it('matches the reference features (max |d| <= 1e-4) and mask', () => {
    const e = expected(name);
    const f = extractLogMel(e.f32('waveform'), melConfig(family));
    const [T, nMel] = e.shape('input_features');
    expect([f.nFrames, f.nMel]).toEqual([T, nMel]);
    const d = maxAbsDiff(f.features, e.f32('input_features'));
    console.log(name, 'max |d|', d);
    expect(d).toBeLessThanOrEqual(1e-4);
    expect(Array.from(f.mask)).toEqual(Array.from(e.i32('input_features_mask')));
  });
});
