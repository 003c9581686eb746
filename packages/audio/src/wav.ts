/**
 * WAV (RIFF/WAVE) decoding to mono float32 in [-1, 1].
 *
 * Supported: PCM integer 8 (unsigned), 16, 24 and 32 bit; IEEE float 32 and 64 bit; both as plain
 * `fmt ` tags (1 = PCM, 3 = float) and as WAVE_FORMAT_EXTENSIBLE (0xFFFE) with the PCM or float
 * sub-format GUID; any channel count >= 1 (channels are averaged to mono). Everything else (ADPCM,
 * A-law, mu-law, MP3-in-WAV, RF64, ...) is rejected with an error that names the codec and lists what is
 * supported. Structural damage (truncated chunks, inconsistent sizes, missing chunks, no samples) is
 * rejected too: a decoder that guesses on broken files produces silent garbage downstream.
 */
import { MlxcelError } from '@mlxcel/tensor';
import { MAX_SAMPLE_RATE, MIN_SAMPLE_RATE } from './rates.js';

export const SUPPORTED_WAV_FORMATS =
  'PCM integer 8/16/24/32-bit and IEEE float 32/64-bit (format tags 1, 3, or 0xFFFE WAVE_FORMAT_EXTENSIBLE with a PCM/float sub-format), 1 or more channels';

export interface DecodedWav {
  sampleRate: number;
  /** Channels in the file (the samples are already mixed down to mono). */
  channels: number;
  bitsPerSample: number;
  encoding: 'pcm' | 'float';
  /** Mono samples in [-1, 1] (the mean of the channels). */
  samples: Float32Array;
}

const CODEC_NAMES: Record<number, string> = {
  0x0002: 'Microsoft ADPCM',
  0x0006: 'A-law',
  0x0007: 'mu-law',
  0x0011: 'IMA ADPCM',
  0x0031: 'GSM 6.10',
  0x0050: 'MPEG',
  0x0055: 'MP3',
  0x00ff: 'AAC',
  0x1610: 'AAC (ADTS)',
  0x2000: 'AC-3',
  0xf1ac: 'FLAC',
};

// KSDATAFORMAT_SUBTYPE_PCM / _IEEE_FLOAT: the format tag in the first two bytes, then this fixed tail.
const GUID_TAIL = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];

function fourcc(b: Uint8Array, off: number): string {
  return String.fromCharCode(b[off]!, b[off + 1]!, b[off + 2]!, b[off + 3]!);
}

function codecName(tag: number): string {
  const hex = `0x${tag.toString(16).padStart(4, '0').toUpperCase()}`;
  return CODEC_NAMES[tag] ? `${CODEC_NAMES[tag]} (format tag ${hex})` : `format tag ${hex}`;
}

interface Fmt {
  tag: number;
  channels: number;
  sampleRate: number;
  blockAlign: number;
  bitsPerSample: number;
}

/** Decodes a WAV file image. `name` is used in error messages. */
export function decodeWav(bytes: Uint8Array, name = '<wav>'): DecodedWav {
  const fail = (code: string, msg: string): never => {
    throw new MlxcelError(code, `${name}: ${msg}`);
  };
  if (bytes.byteLength < 12) fail('E_WAV_TRUNCATED', `truncated RIFF header (${bytes.byteLength} bytes; a WAV file starts with a 12-byte RIFF/WAVE header)`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const riff = fourcc(bytes, 0);
  if (riff === 'RF64' || riff === 'BW64') fail('E_WAV_UNSUPPORTED', `${riff} (64-bit RIFF) files are not supported; supported: ${SUPPORTED_WAV_FORMATS}`);
  if (riff === 'RIFX') fail('E_WAV_UNSUPPORTED', `big-endian RIFX files are not supported; supported: ${SUPPORTED_WAV_FORMATS}`);
  if (riff !== 'RIFF' || fourcc(bytes, 8) !== 'WAVE') fail('E_WAV_FORMAT', 'not a WAV file (no RIFF/WAVE header)');
  const riffSize = dv.getUint32(4, true);
  if (riffSize < 4) fail('E_WAV_CHUNK_SIZE', `RIFF chunk size ${riffSize} is too small to hold the WAVE tag`);
  if (8 + riffSize > bytes.byteLength)
    fail('E_WAV_TRUNCATED', `truncated RIFF: the header declares ${8 + riffSize} bytes but the file has ${bytes.byteLength}`);
  const end = 8 + riffSize;

  let fmt: Fmt | undefined;
  let data: { off: number; size: number } | undefined;
  for (let off = 12; off < end; ) {
    if (off + 8 > end) fail('E_WAV_TRUNCATED', `truncated chunk header at byte ${off} (${end - off} bytes left in the RIFF chunk)`);
    const id = fourcc(bytes, off);
    const size = dv.getUint32(off + 4, true);
    const body = off + 8;
    if (body + size > end)
      fail('E_WAV_TRUNCATED', `truncated "${id}" chunk at byte ${off}: it declares ${size} bytes but only ${end - body} remain`);
    if (id === 'fmt ') {
      if (fmt) fail('E_WAV_FORMAT', 'more than one "fmt " chunk');
      fmt = parseFmt(dv, bytes, body, size, fail);
    } else if (id === 'data') {
      if (data) fail('E_WAV_FORMAT', 'more than one "data" chunk');
      if (!fmt) fail('E_WAV_FORMAT', '"data" chunk before the "fmt " chunk');
      data = { off: body, size };
    }
    off = body + size + (size & 1); // chunks are padded to an even size
  }
  if (!fmt) fail('E_WAV_FORMAT', 'no "fmt " chunk');
  if (!data) fail('E_WAV_FORMAT', 'no "data" chunk');
  const f = fmt!;
  const d = data!;
  if (d.size === 0) fail('E_WAV_EMPTY', 'the "data" chunk is empty (no samples)');
  if (d.size % f.blockAlign !== 0)
    fail('E_WAV_CHUNK_SIZE', `"data" chunk size ${d.size} is not a whole number of ${f.blockAlign}-byte sample frames`);
  const frames = d.size / f.blockAlign;
  return {
    sampleRate: f.sampleRate,
    channels: f.channels,
    bitsPerSample: f.bitsPerSample,
    encoding: f.tag === 3 ? 'float' : 'pcm',
    samples: mixToMono(dv, d.off, frames, f),
  };
}

function parseFmt(dv: DataView, bytes: Uint8Array, off: number, size: number, fail: (c: string, m: string) => never): Fmt {
  if (size < 16) fail('E_WAV_CHUNK_SIZE', `"fmt " chunk is ${size} bytes; it needs at least 16`);
  let tag = dv.getUint16(off, true);
  const channels = dv.getUint16(off + 2, true);
  const sampleRate = dv.getUint32(off + 4, true);
  const blockAlign = dv.getUint16(off + 12, true);
  const bitsPerSample = dv.getUint16(off + 14, true);
  if (tag === 0xfffe) {
    // WAVE_FORMAT_EXTENSIBLE: cbSize (22) + valid bits + channel mask + 16-byte sub-format GUID.
    if (size < 40) fail('E_WAV_CHUNK_SIZE', `"fmt " chunk of a WAVE_FORMAT_EXTENSIBLE file is ${size} bytes; it needs 40`);
    const sub = dv.getUint16(off + 24, true);
    for (let i = 0; i < GUID_TAIL.length; i++)
      if (bytes[off + 26 + i] !== GUID_TAIL[i])
        fail('E_WAV_UNSUPPORTED', `WAVE_FORMAT_EXTENSIBLE with a non-standard sub-format GUID is not supported; supported: ${SUPPORTED_WAV_FORMATS}`);
    if (sub !== 1 && sub !== 3)
      fail('E_WAV_UNSUPPORTED', `unsupported codec: WAVE_FORMAT_EXTENSIBLE with sub-format ${codecName(sub)}; supported: ${SUPPORTED_WAV_FORMATS}`);
    tag = sub;
  }
  if (tag !== 1 && tag !== 3) fail('E_WAV_UNSUPPORTED', `unsupported codec: ${codecName(tag)}; supported: ${SUPPORTED_WAV_FORMATS}`);
  if (channels === 0) fail('E_WAV_CHANNELS', 'the "fmt " chunk declares 0 channels');
  if (sampleRate === 0) fail('E_WAV_RATE', 'the "fmt " chunk declares a sample rate of 0 Hz');
  if (sampleRate < MIN_SAMPLE_RATE || sampleRate > MAX_SAMPLE_RATE)
    fail('E_WAV_RATE', `the "fmt " chunk declares ${sampleRate} Hz, outside the supported ${MIN_SAMPLE_RATE}..${MAX_SAMPLE_RATE} Hz`);
  const okBits = tag === 1 ? [8, 16, 24, 32] : [32, 64];
  if (!okBits.includes(bitsPerSample))
    fail(
      'E_WAV_UNSUPPORTED',
      `unsupported ${tag === 1 ? 'PCM' : 'float'} sample width ${bitsPerSample} bits (${tag === 1 ? 'PCM: 8, 16, 24 or 32' : 'float: 32 or 64'}); supported: ${SUPPORTED_WAV_FORMATS}`,
    );
  const expectAlign = channels * (bitsPerSample / 8);
  if (blockAlign !== expectAlign)
    fail('E_WAV_CHUNK_SIZE', `block align ${blockAlign} does not match ${channels} channel(s) x ${bitsPerSample / 8} bytes = ${expectAlign}`);
  return { tag, channels, sampleRate, blockAlign, bitsPerSample };
}

function mixToMono(dv: DataView, off: number, frames: number, f: Fmt): Float32Array {
  const out = new Float32Array(frames);
  const C = f.channels, bps = f.bitsPerSample / 8;
  const read = sampleReader(dv, f);
  const inv = 1 / C;
  for (let i = 0; i < frames; i++) {
    const base = off + i * f.blockAlign;
    if (C === 1) {
      out[i] = read(base);
      continue;
    }
    let s = 0;
    for (let c = 0; c < C; c++) s += read(base + c * bps);
    out[i] = s * inv;
  }
  return out;
}

function sampleReader(dv: DataView, f: Fmt): (at: number) => number {
  if (f.tag === 3) return f.bitsPerSample === 32 ? (at) => dv.getFloat32(at, true) : (at) => dv.getFloat64(at, true);
  switch (f.bitsPerSample) {
    case 8:
      return (at) => (dv.getUint8(at) - 128) / 128; // 8-bit WAV is unsigned, centred at 128
    case 16:
      return (at) => dv.getInt16(at, true) / 32768;
    case 24:
      return (at) => ((dv.getUint8(at) | (dv.getUint8(at + 1) << 8) | (dv.getInt8(at + 2) << 16)) / 8388608);
    default:
      return (at) => dv.getInt32(at, true) / 2147483648;
  }
}

/** Encodes mono or interleaved samples as a WAV image (tests, tools). PCM 8/16/24/32 or float 32/64. */
export function encodeWav(
  samples: Float32Array,
  opts: { sampleRate: number; channels?: number; encoding?: 'pcm' | 'float'; bitsPerSample?: number; extensible?: boolean },
): Uint8Array {
  const C = opts.channels ?? 1, enc = opts.encoding ?? 'pcm', bits = opts.bitsPerSample ?? (enc === 'pcm' ? 16 : 32);
  const bps = bits / 8, frames = Math.floor(samples.length / C);
  const fmtSize = opts.extensible ? 40 : 16;
  const dataSize = frames * C * bps;
  const buf = new Uint8Array(12 + 8 + fmtSize + 8 + dataSize + (dataSize & 1));
  const dv = new DataView(buf.buffer);
  const put = (off: number, s: string) => { for (let i = 0; i < 4; i++) buf[off + i] = s.charCodeAt(i); };
  put(0, 'RIFF'); dv.setUint32(4, buf.length - 8, true); put(8, 'WAVE');
  put(12, 'fmt '); dv.setUint32(16, fmtSize, true);
  const tag = enc === 'pcm' ? 1 : 3;
  dv.setUint16(20, opts.extensible ? 0xfffe : tag, true);
  dv.setUint16(22, C, true); dv.setUint32(24, opts.sampleRate, true);
  dv.setUint32(28, opts.sampleRate * C * bps, true); dv.setUint16(32, C * bps, true); dv.setUint16(34, bits, true);
  if (opts.extensible) {
    dv.setUint16(36, 22, true); dv.setUint16(38, bits, true); dv.setUint32(40, 0, true);
    dv.setUint16(44, tag, true);
    buf.set(GUID_TAIL, 46);
  }
  const d0 = 20 + fmtSize;
  put(d0, 'data'); dv.setUint32(d0 + 4, dataSize, true);
  let at = d0 + 8;
  for (let i = 0; i < frames * C; i++, at += bps) {
    const v = Math.max(-1, Math.min(1, samples[i]!));
    if (enc === 'float') { if (bits === 32) dv.setFloat32(at, samples[i]!, true); else dv.setFloat64(at, samples[i]!, true); continue; }
    if (bits === 8) dv.setUint8(at, Math.max(0, Math.min(255, Math.round(v * 128 + 128))));
    else if (bits === 16) dv.setInt16(at, Math.max(-32768, Math.min(32767, Math.round(v * 32768))), true);
    else if (bits === 24) {
      const q = Math.max(-8388608, Math.min(8388607, Math.round(v * 8388608)));
      dv.setUint8(at, q & 255); dv.setUint8(at + 1, (q >> 8) & 255); dv.setInt8(at + 2, q >> 16);
    } else dv.setInt32(at, Math.max(-2147483648, Math.min(2147483647, Math.round(v * 2147483648))), true);
  }
  return buf;
}
