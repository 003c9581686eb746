// WAV sample rates are bounded to 4 kHz..768 kHz (rates.ts says why): a header declaring 1 Hz made the
// resampler crawl (200 samples took 12 s), 4 GHz gave "the waveform is empty". Only regular files are read.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeWav, encodeWav, loadAudio, MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, resample } from '../src/index.js';

const tone = (n: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i / 3));

/** A valid WAV whose "fmt " chunk then declares `rate` (bytes 24..27; byte rate 28..31 kept consistent). */
function wavAt(rate: number): Uint8Array {
  const b = encodeWav(tone(200), { sampleRate: 16000 });
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  dv.setUint32(24, rate >>> 0, true);
  dv.setUint32(28, (rate * 2) >>> 0, true);
  return b;
}

describe('WAV sample rate bounds', () => {
  it.each([1, 3999, 768001, 4_000_000_000])('%i Hz is refused by name and at once', (rate) => {
    const t0 = Date.now();
    expect(() => decodeWav(wavAt(rate), 'x.wav')).toThrow(expect.objectContaining({ code: 'E_WAV_RATE' }));
    expect(() => decodeWav(wavAt(rate), 'x.wav')).toThrow(new RegExp(`declares ${rate} Hz, outside the supported 4000\\.\\.768000 Hz`));
    expect(Date.now() - t0).toBeLessThan(1000);
  });
  it('the edges are accepted and resampled', () => {
    for (const rate of [MIN_SAMPLE_RATE, 8000, 44100, MAX_SAMPLE_RATE]) expect(loadAudio(wavAt(rate)).sourceRate).toBe(rate);
  });
  it('resample() itself refuses rates outside the range', () => {
    expect(() => resample(tone(200), 1, 16000)).toThrow(/resample: fromRate 1 Hz is outside the supported 4000\.\.768000 Hz/);
  });
});

describe('only regular files are read', () => {
  const dir = mkdtempSync(`${tmpdir()}/mlxcel-audio-`);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('a directory given as the audio file is refused by name', () => {
    expect(() => loadAudio(dir)).toThrow(new RegExp(`audio file ${dir} is a directory, not a regular file`));
  });
});
