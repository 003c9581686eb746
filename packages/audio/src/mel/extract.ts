/**
 * Waveform -> log-mel features + frame validity mask (docs/architecture/audio.md §2.2). Padding, framing and the mask
 * are here; the per-frame FFT, mel projection and log run in the native `logMel` kernel.
 */
import * as native from '@mlxcel/core-native';
import { MlxcelError } from '@mlxcel/tensor';
import type { MelConfig } from './config.js';
import { melFilterbank, periodicHann } from './filterbank.js';

export interface LogMelFeatures {
  /** [nFrames, nMel] float32. */
  features: Float32Array;
  /** [nFrames], 1 = valid frame (True = valid, as in the fixtures' input_features_mask). */
  mask: Uint8Array;
  nFrames: number;
  nMel: number;
}

export interface ExtractOptions {
  /**
   * Pad the clip to this many samples before the multiple-of padding (the longest clip of a batch).
   * Gemma 3n's encoder sees padding near the end of a clip, so batched references depend on it.
   */
  padToLength?: number;
}

const tables = new WeakMap<MelConfig, { window: Float32Array; filters: Float64Array }>();

function tablesFor(cfg: MelConfig): { window: Float32Array; filters: Float64Array } {
  let t = tables.get(cfg);
  if (!t) {
    t = {
      window: periodicHann(cfg.frameLength, cfg.windowPrecision),
      filters: melFilterbank({ fftSize: cfg.fftSize, nMel: cfg.nMel, sampleRate: cfg.sampleRate, fMin: cfg.fMin, fMax: cfg.fMax }),
    };
    tables.set(cfg, t);
  }
  return t;
}

/** Number of mel frames for a padded signal of `len` samples (incl. any semicausal left pad). */
export function frameCount(len: number, cfg: MelConfig): number {
  const n = Math.floor((len - (cfg.frameLength + 1)) / cfg.hop) + 1;
  return Math.max(0, n);
}

/** Log-mel features of one mono clip at cfg.sampleRate (float samples in [-1, 1]). */
export function extractLogMel(waveform: Float32Array, cfg: MelConfig, opts: ExtractOptions = {}): LogMelFeatures {
  if (!(waveform instanceof Float32Array)) throw new MlxcelError('E_ARG', 'extractLogMel: waveform must be a Float32Array');
  for (let i = 0; i < waveform.length; i++)
    if (!Number.isFinite(waveform[i]!)) throw new MlxcelError('E_AUDIO', `extractLogMel: sample ${i} is ${waveform[i]} (not finite)`);
  const real = Math.min(waveform.length, cfg.maxLength);
  if (real === 0) throw new MlxcelError('E_AUDIO', 'extractLogMel: the waveform is empty');
  let padded = Math.max(real, Math.min(opts.padToLength ?? 0, cfg.maxLength));
  const m = cfg.padToMultipleOf;
  if (m > 1) padded = Math.ceil(padded / m) * m;
  const left = cfg.semicausalPad ? Math.floor(cfg.frameLength / 2) : 0;
  const len = left + padded;
  const nFrames = frameCount(len, cfg);
  if (nFrames === 0)
    throw new MlxcelError('E_AUDIO', `extractLogMel: ${real} samples are too short for one ${cfg.frameLength + 1}-sample frame`);
  const signal = new Float32Array(len);
  if (cfg.inputScaleFactor === 1) signal.set(waveform.subarray(0, real), left);
  else for (let i = 0; i < real; i++) signal[left + i] = Math.fround(waveform[i]! * cfg.inputScaleFactor);
  const { window, filters } = tablesFor(cfg);
  const features = new Float32Array(nFrames * cfg.nMel);
  native.logMel({
    signal, nFrames, frameLength: cfg.frameLength, hop: cfg.hop, fftSize: cfg.fftSize,
    preemphasis: cfg.preemphasis, preemphasisHtk: cfg.preemphasisHtk, window,
    melFilters: filters, nMel: cfg.nMel, floorMode: cfg.floorMode, melFloor: cfg.melFloor, out: features,
  });
  if (cfg.perBinMean || cfg.perBinStddev) normalizePerBin(features, cfg);
  // Validity of a frame = validity of its first (3n) or last (Gemma 4) sample, in padded coordinates.
  const mask = new Uint8Array(nFrames);
  const probe = cfg.maskSample === 'first' ? 0 : cfg.frameLength;
  for (let t = 0; t < nFrames; t++) {
    const s = t * cfg.hop + probe - left;
    mask[t] = s >= 0 && s < real ? 1 : 0;
  }
  if (cfg.zeroInvalidFrames)
    for (let t = 0; t < nFrames; t++) if (!mask[t]) features.fill(0, t * cfg.nMel, (t + 1) * cfg.nMel);
  return { features, mask, nFrames, nMel: cfg.nMel };
}

function normalizePerBin(x: Float32Array, cfg: MelConfig): void {
  const nm = cfg.nMel;
  for (let i = 0; i < x.length; i++) {
    let v = x[i]!;
    if (cfg.perBinMean) v -= cfg.perBinMean[i % nm]!;
    if (cfg.perBinStddev) v /= cfg.perBinStddev[i % nm]!;
    x[i] = v;
  }
}
