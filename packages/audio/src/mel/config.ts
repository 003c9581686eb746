/**
 * Log-mel front-end settings of the two Gemma audio models (docs/architecture/audio.md §2.1). The defaults are the HF
 * extractors'; a checkpoint's preprocessor_config.json overrides them key by key.
 */
import { MlxcelError } from '@mlxcel/tensor';

export interface MelConfig {
  family: 'gemma4' | 'gemma3n';
  sampleRate: number;
  nMel: number;
  /** Samples windowed per frame (FL). */
  frameLength: number;
  hop: number;
  fftSize: number;
  fMin: number;
  fMax: number;
  /** 0 = off. */
  preemphasis: number;
  preemphasisHtk: boolean;
  /** 'add': ln(mel + floor) (Gemma 4); 'max': ln(max(mel, floor)) (Gemma 3n). */
  floorMode: 'add' | 'max';
  melFloor: number;
  /** Gemma 4 prepends FL/2 zeros ("semicausal" framing). */
  semicausalPad: boolean;
  /** Which sample decides a frame's validity: the first of the frame (3n) or the last (Gemma 4). */
  maskSample: 'first' | 'last';
  /** Gemma 4 zeroes the features of invalid frames; 3n keeps them as computed. */
  zeroInvalidFrames: boolean;
  /** How the reference evaluates its Hann window (see periodicHann). */
  windowPrecision: 'f32' | 'f64';
  inputScaleFactor: number;
  /** Clips are truncated to this many samples and padded to a multiple of padToMultipleOf. */
  maxLength: number;
  padToMultipleOf: number;
  perBinMean: Float64Array | null;
  perBinStddev: Float64Array | null;
}

function num(pre: Record<string, unknown>, key: string, dflt: number): number {
  const v = pre[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new MlxcelError('E_CONFIG', `preprocessor_config.json: "${key}" must be a finite number, got ${JSON.stringify(v)}`);
  return v;
}

function bool(pre: Record<string, unknown>, key: string, dflt: boolean): boolean {
  const v = pre[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw new MlxcelError('E_CONFIG', `preprocessor_config.json: "${key}" must be a boolean`);
  return v;
}

function perBin(pre: Record<string, unknown>, key: string, n: number): Float64Array | null {
  const v = pre[key];
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v) || v.length !== n || !v.every((x) => typeof x === 'number'))
    throw new MlxcelError('E_CONFIG', `preprocessor_config.json: "${key}" must be a list of ${n} numbers`);
  return Float64Array.from(v as number[]);
}

/** The extractor of a model family, with optional preprocessor_config.json overrides. */
export function melConfig(family: 'gemma4' | 'gemma3n', pre: Record<string, unknown> = {}): MelConfig {
  const g4 = family === 'gemma4';
  const sampleRate = num(pre, 'sampling_rate', 16000);
  const nMel = num(pre, 'feature_size', 128);
  const frameLength = Math.round((sampleRate * num(pre, 'frame_length_ms', g4 ? 20 : 32)) / 1000);
  const hop = Math.round((sampleRate * num(pre, 'hop_length_ms', 10)) / 1000);
  let fftSize = 2 ** Math.ceil(Math.log2(frameLength));
  if (bool(pre, 'fft_overdrive', !g4)) fftSize *= 2;
  const dither = num(pre, 'dither', 0);
  if (dither !== 0)
    throw new MlxcelError('E_CONFIG', `preprocessor_config.json: dither ${dither} is not supported (it adds random noise; features would not be reproducible)`);
  const cfg: MelConfig = {
    family,
    sampleRate,
    nMel,
    frameLength,
    hop,
    fftSize,
    fMin: num(pre, 'min_frequency', g4 ? 0 : 125),
    fMax: num(pre, 'max_frequency', g4 ? 8000 : 7600),
    preemphasis: num(pre, 'preemphasis', g4 ? 0 : 0.97),
    preemphasisHtk: bool(pre, 'preemphasis_htk_flavor', true),
    floorMode: g4 ? 'add' : 'max',
    melFloor: num(pre, 'mel_floor', g4 ? 1e-3 : 1e-5),
    semicausalPad: g4,
    maskSample: g4 ? 'last' : 'first',
    zeroInvalidFrames: g4,
    windowPrecision: g4 ? 'f64' : 'f32',
    inputScaleFactor: num(pre, 'input_scale_factor', 1),
    maxLength: num(pre, 'max_length', 480000),
    padToMultipleOf: num(pre, 'pad_to_multiple_of', 128),
    perBinMean: perBin(pre, 'per_bin_mean', nMel),
    perBinStddev: perBin(pre, 'per_bin_stddev', nMel),
  };
  if (!(cfg.frameLength > 0 && cfg.hop > 0 && cfg.nMel > 0 && cfg.fMax > cfg.fMin && cfg.fMax <= sampleRate / 2))
    throw new MlxcelError(
      'E_CONFIG',
      `preprocessor_config.json: inconsistent mel settings (frame ${cfg.frameLength}, hop ${cfg.hop}, ${cfg.nMel} bins, ${cfg.fMin}-${cfg.fMax} Hz at ${sampleRate} Hz)`,
    );
  return cfg;
}
