import { describe, expect, it } from 'vitest';
import { resample } from '../src/index.js';

const sine = (f: number, sr: number, n: number) => Float32Array.from({ length: n }, (_, i) => Math.sin((2 * Math.PI * f * i) / sr));

/** Amplitude of frequency f in x (sampled at sr) by correlation over the central part. */
function amplitude(x: Float32Array, f: number, sr: number): number {
  const a = Math.floor(x.length / 4), b = Math.floor((3 * x.length) / 4);
  let re = 0, im = 0;
  for (let i = a; i < b; i++) {
    re += x[i]! * Math.cos((2 * Math.PI * f * i) / sr);
    im += x[i]! * Math.sin((2 * Math.PI * f * i) / sr);
  }
  return (2 * Math.hypot(re, im)) / (b - a);
}

describe('resample', () => {
  it.each([
    [44100, 16000, 1000],
    [48000, 16000, 3000],
    [22050, 16000, 6500],
    [8000, 16000, 1500],
  ])('%i -> %i Hz keeps a %i Hz tone (max error < 2e-3 away from the edges)', (from, to, f) => {
    const x = sine(f, from, from); // 1 s
    const y = resample(x, from, to);
    expect(y.length).toBe(to);
    const ref = sine(f, to, to);
    let m = 0;
    for (let i = 200; i < to - 200; i++) m = Math.max(m, Math.abs(y[i]! - ref[i]!));
    expect(m).toBeLessThan(2e-3);
  });

  it('removes content above the output Nyquist instead of aliasing it (> 80 dB)', () => {
    // 12 kHz at 48 kHz would alias to 4 kHz at 16 kHz without a filter.
    const y = resample(sine(12000, 48000, 48000), 48000, 16000);
    expect(amplitude(y, 4000, 16000)).toBeLessThan(1e-4);
    // A naive decimator keeps it at full scale, so the measurement itself can see aliasing.
    const naive = Float32Array.from({ length: 16000 }, (_, i) => Math.sin((2 * Math.PI * 12000 * 3 * i) / 48000));
    expect(amplitude(naive, 4000, 16000)).toBeGreaterThan(0.9);
  });

  it('returns a copy at equal rates and rejects bad rates', () => {
    const x = sine(100, 16000, 10);
    const y = resample(x, 16000, 16000);
    expect(y).not.toBe(x);
    expect(Array.from(y)).toEqual(Array.from(x));
    expect(() => resample(x, 0, 16000)).toThrow(/fromRate must be a positive integer/);
    expect(() => resample(x, 16000, 15999.5)).toThrow(/toRate must be a positive integer/);
  });
});
