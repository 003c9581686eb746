import { describe, expect, it } from 'vitest';
import { decodeWav, encodeWav, loadAudio, SUPPORTED_WAV_FORMATS } from '../src/index.js';
import { MlxcelError } from '@mlxcel/tensor';

function tone(n: number, amp = 0.5): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => amp * Math.sin((2 * Math.PI * 440 * i) / 16000));
}

/** Runs fn and returns the MlxcelError it throws (fails the test if it does not throw one). */
function errorOf(fn: () => unknown): MlxcelError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(MlxcelError);
    return e as MlxcelError;
  }
  throw new Error('expected an MlxcelError');
}

describe('decodeWav: supported formats', () => {
  const x = tone(400);
  it.each([
    ['pcm', 8, 1 / 128],
    ['pcm', 16, 1 / 32768],
    ['pcm', 24, 1 / 8388608],
    ['pcm', 32, 1 / 2147483648],
    ['float', 32, 0],
    ['float', 64, 0],
  ] as const)('%s %i-bit round-trips within one quantization step', (encoding, bits, step) => {
    for (const extensible of [false, true]) {
      const w = decodeWav(encodeWav(x, { sampleRate: 16000, encoding, bitsPerSample: bits, extensible }));
      expect(w).toMatchObject({ sampleRate: 16000, channels: 1, bitsPerSample: bits, encoding });
      let m = 0;
      for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(w.samples[i]! - x[i]!));
      expect(m).toBeLessThanOrEqual(step * 0.5 + 1e-7);
    }
  });

  it('mixes multi-channel files down to the mean of the channels', () => {
    const L = tone(100, 0.5), R = tone(100, -0.25);
    const inter = new Float32Array(300);
    for (let i = 0; i < 100; i++) { inter[3 * i] = L[i]!; inter[3 * i + 1] = R[i]!; inter[3 * i + 2] = 0.3; }
    const w = decodeWav(encodeWav(inter, { sampleRate: 22050, channels: 3, encoding: 'float' }));
    expect(w.channels).toBe(3);
    expect(w.samples.length).toBe(100);
    for (let i = 0; i < 100; i++) expect(w.samples[i]).toBeCloseTo((L[i]! + R[i]! + 0.3) / 3, 6);
  });

  it('decodes 8-bit PCM as unsigned around 128 and skips unknown chunks', () => {
    const base = encodeWav(Float32Array.from([0, 0.5, -0.5, -1]), { sampleRate: 8000, bitsPerSample: 8 });
    // Insert a LIST chunk (odd size + pad byte) between fmt and data.
    const list = new Uint8Array([0x4c, 0x49, 0x53, 0x54, 3, 0, 0, 0, 1, 2, 3, 0]);
    const f = new Uint8Array(base.length + list.length);
    f.set(base.subarray(0, 36)); f.set(list, 36); f.set(base.subarray(36), 36 + list.length);
    new DataView(f.buffer).setUint32(4, f.length - 8, true);
    expect(Array.from(decodeWav(f).samples)).toEqual([0, 0.5, -0.5, -1]);
  });

  it('loadAudio resamples to 16 kHz', () => {
    const a = loadAudio(encodeWav(Float32Array.from({ length: 4410 }, (_, i) => Math.sin((2 * Math.PI * 300 * i) / 44100)), { sampleRate: 44100 }));
    expect(a).toMatchObject({ sampleRate: 16000, sourceRate: 44100, sourceChannels: 1 });
    expect(a.samples.length).toBe(1600);
  });
});

describe('decodeWav: malformed audio gives clear errors', () => {
  const good = () => encodeWav(tone(64), { sampleRate: 16000 });

  it('truncated RIFF (file shorter than the RIFF header claims)', () => {
    const e = errorOf(() => decodeWav(good().subarray(0, 60), 'a.wav'));
    expect(e.code).toBe('E_WAV_TRUNCATED');
    expect(e.message).toMatch(/^a\.wav: truncated RIFF: the header declares 172 bytes but the file has 60/);
    expect(errorOf(() => decodeWav(new Uint8Array(8))).code).toBe('E_WAV_TRUNCATED');
  });

  it('wrong chunk sizes (data chunk past the end, short fmt, partial sample frame, bad block align)', () => {
    const f = good();
    new DataView(f.buffer).setUint32(40, 1000, true); // data chunk claims 1000 bytes
    const e = errorOf(() => decodeWav(f));
    expect(e.code).toBe('E_WAV_TRUNCATED');
    expect(e.message).toMatch(/"data" chunk at byte 36: it declares 1000 bytes but only 128 remain/);

    const g = good();
    new DataView(g.buffer).setUint32(16, 12, true); // fmt chunk of 12 bytes
    expect(errorOf(() => decodeWav(g)).message).toMatch(/"fmt " chunk is 12 bytes; it needs at least 16/);

    const h = encodeWav(tone(63), { sampleRate: 16000 }); // 126 data bytes + pad -> declare 125
    new DataView(h.buffer).setUint32(40, 125, true);
    const eh = errorOf(() => decodeWav(h));
    expect(eh.code).toBe('E_WAV_CHUNK_SIZE');
    expect(eh.message).toMatch(/"data" chunk size 125 is not a whole number of 2-byte sample frames/);

    const k = good();
    new DataView(k.buffer).setUint16(32, 4, true); // block align 4 for mono 16-bit
    expect(errorOf(() => decodeWav(k)).message).toMatch(/block align 4 does not match 1 channel\(s\) x 2 bytes = 2/);
  });

  it('zero channels', () => {
    const f = good();
    new DataView(f.buffer).setUint16(22, 0, true);
    const e = errorOf(() => decodeWav(f));
    expect(e.code).toBe('E_WAV_CHANNELS');
    expect(e.message).toMatch(/declares 0 channels/);
  });

  it('unsupported codecs name the codec and list the supported formats', () => {
    const f = good();
    new DataView(f.buffer).setUint16(20, 0x0007, true); // mu-law
    const e = errorOf(() => decodeWav(f));
    expect(e.code).toBe('E_WAV_UNSUPPORTED');
    expect(e.message).toContain('unsupported codec: mu-law (format tag 0x0007)');
    expect(e.message).toContain(SUPPORTED_WAV_FORMATS);

    const x = encodeWav(tone(64), { sampleRate: 16000, extensible: true });
    new DataView(x.buffer).setUint16(44, 0x0002, true); // extensible with an ADPCM sub-format
    expect(errorOf(() => decodeWav(x)).message).toContain('WAVE_FORMAT_EXTENSIBLE with sub-format Microsoft ADPCM (format tag 0x0002)');

    const p = encodeWav(tone(64), { sampleRate: 16000, encoding: 'float', bitsPerSample: 32 });
    new DataView(p.buffer).setUint16(20, 1, true); // PCM tag with a 12-bit width
    new DataView(p.buffer).setUint16(34, 12, true);
    expect(errorOf(() => decodeWav(p)).message).toMatch(/unsupported PCM sample width 12 bits/);

    const rf = good();
    rf.set([0x52, 0x46, 0x36, 0x34], 0); // RF64
    expect(errorOf(() => decodeWav(rf)).message).toMatch(/RF64 \(64-bit RIFF\) files are not supported/);
  });

  it('empty data', () => {
    const e = errorOf(() => decodeWav(encodeWav(new Float32Array(0), { sampleRate: 16000 })));
    expect(e.code).toBe('E_WAV_EMPTY');
    expect(e.message).toMatch(/the "data" chunk is empty \(no samples\)/);
  });

  it('missing chunks and non-WAV input', () => {
    const noData = good().slice(0, 36);
    new DataView(noData.buffer).setUint32(4, 28, true);
    expect(errorOf(() => decodeWav(noData)).message).toMatch(/no "data" chunk/);
    const txt = new TextEncoder().encode('this is not a wav file at all');
    expect(errorOf(() => decodeWav(txt)).message).toMatch(/not a WAV file/);
    const z = good();
    new DataView(z.buffer).setUint32(24, 0, true);
    expect(errorOf(() => decodeWav(z)).code).toBe('E_WAV_RATE');
  });
});
