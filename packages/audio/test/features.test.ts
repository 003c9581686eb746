import { describe, expect, it } from 'vitest';
import { extractLogMel, frameCount, gemma4AudioTokenCount, melConfig, periodicHann } from '../src/index.js';
import { numpyCosF32 } from '../src/mel/npcos.js';
import { maxAbsDiff } from '@mlxcel/tensor';
import { expected } from './helpers.js';

describe.each([
  ['gemma4-audio-tiny', 'gemma4'],
  ['gemma3n-audio-tiny', 'gemma3n'],
] as const)('%s input_features', (name, family) => {
  it('match the reference (max |d| <= 1e-4) with the same mask', () => {
    const e = expected(name);
    const f = extractLogMel(e.f32('waveform'), melConfig(family));
    expect([f.nFrames, f.nMel]).toEqual([...e.shape('input_features')]);
    expect(maxAbsDiff(f.features, e.f32('input_features'))).toBeLessThanOrEqual(1e-4);
    expect(Array.from(f.mask)).toEqual(Array.from(e.i32('input_features_mask')));
  });
});

describe('front-end details', () => {
  const g4 = melConfig('gemma4'), g3 = melConfig('gemma3n');
  const clip = (n: number) => Float32Array.from({ length: n }, (_, i) => 0.4 * Math.sin(i * 0.05) + 0.1 * Math.sin(i * 1.3));

  it('has the spec parameters', () => {
    expect(g4).toMatchObject({ frameLength: 320, hop: 160, fftSize: 512, fMin: 0, fMax: 8000, preemphasis: 0, floorMode: 'add', melFloor: 1e-3, semicausalPad: true });
    expect(g3).toMatchObject({ frameLength: 512, hop: 160, fftSize: 1024, fMin: 125, fMax: 7600, preemphasis: 0.97, floorMode: 'max', melFloor: 1e-5, semicausalPad: false });
  });

  it('frame counts: 1 s -> 97 (3n) / 99 (Gemma 4); 30 s -> 2997 / 2999; longer clips are truncated', () => {
    expect(extractLogMel(clip(16000), g3).nFrames).toBe(97);
    expect(extractLogMel(clip(16000), g4).nFrames).toBe(99);
    expect(frameCount(480000, g3)).toBe(2997);
    expect(frameCount(480000 + 160, g4)).toBe(2999);
    expect(extractLogMel(clip(500000), g4).nFrames).toBe(2999);
  });

  it('a clip that is not a multiple of 128 or 160: padding, masks and zeroed frames', () => {
    const n = 16001;
    const f4 = extractLogMel(clip(n), g4);
    // padded to 16128; Gemma 4 frames: floor((16128 + 160 - 321) / 160) + 1 = 100.
    expect(f4.nFrames).toBe(100);
    const valid4 = f4.mask.reduce((a, b) => a + b, 0);
    expect(valid4).toBe(Math.floor((n + 160 - 321) / 160) + 1); // the last sample of each valid frame is real
    expect(Math.ceil(Math.ceil(valid4 / 2) / 2)).toBe(gemma4AudioTokenCount(n));
    for (let t = valid4; t < f4.nFrames; t++) expect(Array.from(f4.features.subarray(t * 128, (t + 1) * 128)).every((v) => v === 0)).toBe(true);
    const f3 = extractLogMel(clip(n), g3);
    expect(f3.nFrames).toBe(Math.floor((16128 - 513) / 160) + 1);
    expect(f3.mask.reduce((a, b) => a + b, 0)).toBe(f3.nFrames); // 3n: a frame is valid when its first sample is real
    const tail = extractLogMel(clip(n), g3, { padToLength: 20000 });
    expect(tail.nFrames).toBeGreaterThan(f3.nFrames);
    expect(tail.mask[tail.nFrames - 1]).toBe(0);
    // 3n keeps padded frames as computed: all-zero input -> ln(1e-5) everywhere.
    expect(tail.features[(tail.nFrames - 1) * 128]).toBeCloseTo(Math.log(1e-5), 4);
  });

  it("Gemma 3n's window uses numpy's float32 cosine, not a correctly rounded one", () => {
    // Values probed from numpy 2.x: np.cos(float32 array) at these float32 arguments.
    const x3 = Math.fround(Math.fround(Math.fround(2 * Math.PI) * 3) / 512);
    expect(numpyCosF32(x3)).toBe(Math.fround(0.9993224143981934));
    expect(Math.fround(Math.cos(x3))).toBe(Math.fround(0.9993223547935486)); // correctly rounded differs
    expect(periodicHann(512, 'f32')[3]).toBe(Math.fround(0.0003387928009033203));
    // At float32(5 pi / 4) the quadrant is a tie unless rounded with a fused multiply-add, as numpy's wheels do.
    const x320 = Math.fround(Math.fround(Math.fround(2 * Math.PI) * 320) / 512);
    expect(numpyCosF32(x320)).toBe(Math.fround(-0.70710665));
  });

  it('rejects empty, too-short and non-finite input, and dither', () => {
    expect(() => extractLogMel(new Float32Array(0), g4)).toThrow(/waveform is empty/);
    expect(() => extractLogMel(Float32Array.from([0, NaN]), g4)).toThrow(/sample 1 is NaN/);
    expect(() => melConfig('gemma4', { dither: 1e-4 })).toThrow(/dither/);
    expect(() => melConfig('gemma3n', { max_frequency: 9000 })).toThrow(/inconsistent mel settings/);
  });

  it('a one-minute clip takes well under a second', () => {
    const cfg = { ...melConfig('gemma4'), maxLength: Infinity };
    const x = clip(60 * 16000);
    const t0 = performance.now();
    const f = extractLogMel(x, cfg);
    const ms = performance.now() - t0;
    expect(f.nFrames).toBe(5999);
    expect(ms).toBeLessThan(1000);
  });
});
