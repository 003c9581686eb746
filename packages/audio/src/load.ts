/** File -> mono float32 at the model rate: WAV decoding, channel mix-down and resampling in one call. */
import { basename } from 'node:path';
import { readRegularFile } from '@mlxcel/tensor';
import { resample } from './resample.js';
import { decodeWav } from './wav.js';

export interface LoadedAudio {
  /** Mono samples at `sampleRate`. */
  samples: Float32Array;
  sampleRate: number;
  /** The file's own rate and channel count. */
  sourceRate: number;
  sourceChannels: number;
}

/** Reads a WAV file (path or bytes) and returns mono samples at `targetRate` (default 16 kHz). */
export function loadAudio(src: string | Uint8Array, targetRate = 16000): LoadedAudio {
  let bytes: Uint8Array, name: string;
  if (typeof src === 'string') {
    name = basename(src);
    bytes = readRegularFile(src, 'audio file');  // a directory or FIFO is refused by name, never read
  } else {
    bytes = src;
    name = '<wav bytes>';
  }
  const wav = decodeWav(bytes, name);
  return {
    samples: resample(wav.samples, wav.sampleRate, targetRate),
    sampleRate: targetRate,
    sourceRate: wav.sampleRate,
    sourceChannels: wav.channels,
  };
}
