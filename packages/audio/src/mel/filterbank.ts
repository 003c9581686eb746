import { numpyCosF32 } from './npcos.js';

/**
 * Mel filterbank and analysis windows, computed the way the HF feature extractors compute them
 * (numpy float64 for the filters; the window in the precision each extractor uses), so the features
 * match the references to float32 rounding.
 */

/** numpy.linspace(start, stop, num) including its exact arithmetic (i * step + start, last = stop). */
export function linspace(start: number, stop: number, num: number): Float64Array {
  const y = new Float64Array(num);
  const div = num - 1;
  const step = div > 0 ? (stop - start) / div : 0;
  for (let i = 0; i < num; i++) y[i] = i * step + start;
  if (num > 1) y[num - 1] = stop;
  return y;
}

const hzToMel = (f: number): number => 2595.0 * Math.log10(1.0 + f / 700.0);
const melToHz = (m: number): number => 700.0 * (Math.pow(10, m / 2595.0) - 1.0);

/**
 * HTK-scale triangular filters without area normalization, as a row-major [nBins, nMel] float64
 * matrix (bins k = 0 .. fftSize/2 at k * sr / fftSize). Same triangles as Gemma 3n's
 * `create_fb_matrix` and `transformers.audio_utils.mel_filter_bank(norm=None, mel_scale="htk")`.
 */
export function melFilterbank(opts: { fftSize: number; nMel: number; sampleRate: number; fMin: number; fMax: number }): Float64Array {
  const { fftSize, nMel, sampleRate, fMin, fMax } = opts;
  const nBins = fftSize / 2 + 1;
  const mPts = linspace(hzToMel(fMin), hzToMel(fMax), nMel + 2);
  const fPts = mPts.map(melToHz);
  const fb = new Float64Array(nBins * nMel);
  for (let k = 0; k < nBins; k++) {
    const f = k * (sampleRate / fftSize);
    for (let m = 0; m < nMel; m++) {
      const down = -(fPts[m]! - f) / (fPts[m + 1]! - fPts[m]!);
      const up = (fPts[m + 2]! - f) / (fPts[m + 2]! - fPts[m + 1]!);
      fb[k * nMel + m] = Math.max(0, Math.min(down, up));
    }
  }
  return fb;
}

/**
 * Periodic Hann window w[n] = 0.5 - 0.5 cos(2 pi n / N), n < N, rounded to float32.
 * `precision: 'f64'` evaluates it in float64 as numpy.hanning(N + 1)[:-1] does (Gemma 4's
 * `window_function`); `'f32'` follows Gemma 3n's float32 expression 0.5 * (1 - cos(2 pi n / N)) with
 * every intermediate rounded to float32 and numpy's own float32 cosine (see npcos.ts).
 */
export function periodicHann(N: number, precision: 'f32' | 'f64'): Float32Array {
  const w = new Float32Array(N);
  const f = Math.fround;
  if (precision === 'f64') {
    // numpy.hanning(M): n = arange(1 - M, M, 2); 0.5 + 0.5 cos(pi n / (M - 1)), here with M = N + 1.
    const M = N + 1;
    for (let i = 0; i < N; i++) w[i] = 0.5 + 0.5 * Math.cos((Math.PI * (1 - M + 2 * i)) / (M - 1));
  } else {
    const twoPi = f(2 * Math.PI);
    for (let i = 0; i < N; i++) {
      const arg = f(f(twoPi * i) / N);
      w[i] = f(0.5 * f(1 - numpyCosF32(arg)));
    }
  }
  return w;
}
