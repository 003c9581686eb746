/**
 * Gemma 3n's sub-sample conv projection (docs/architecture/audio.md §3.1): per block a Conv2d with "reverse causal"
 * time padding (0 before, kh - 1 after), frequency padding (1, 1), then a cumulative group norm over
 * the (frequency, channel) plane that is causal in time, then ReLU. The padding mask is ignored here
 * (as in the reference), so the last valid frames see the padded mel frames after them.
 */
import { loadVector, type WeightStore } from '@mlxcel/tensor';
import { loadConvKernel } from '@mlxcel/models-core';
import { conv2d, type Conv2dSpec } from '../conformer/conv.js';
import type { Gemma3nAudioConfig } from './config.js';

/**
 * Cumulative group norm, in place on x [T, F, C]: statistics over every (f, c) of frames 0..t, where
 * each earlier frame's squared deviations are taken from *its own* running mean, exactly as the
 * reference accumulates them (not the textbook running variance); y = (x - mu_t) rsqrt(var_t + eps) g[c].
 */
export function cumulativeGroupNorm(x: Float32Array, T: number, F: number, C: number, gamma: Float32Array, eps: number): void {
  const plane = F * C;
  let cumSum = 0, cumSq = 0;
  for (let t = 0; t < T; t++) {
    const row = x.subarray(t * plane, (t + 1) * plane);
    let s = 0;
    for (let i = 0; i < plane; i++) s += row[i]!;
    cumSum += s;
    const n = (t + 1) * plane;
    const mu = cumSum / n;
    let q = 0;
    for (let i = 0; i < plane; i++) {
      const d = row[i]! - mu;
      q += d * d;
    }
    cumSq += q;
    const inv = 1 / Math.sqrt(cumSq / n + eps);
    for (let i = 0; i < plane; i++) row[i] = (row[i]! - mu) * inv * gamma[i % C]!;
  }
}

export class Gemma3nSubsampler {
  private constructor(
    private readonly specs: [Conv2dSpec, Conv2dSpec],
    private readonly weights: [Float32Array, Float32Array],
    private readonly gammas: [Float32Array, Float32Array],
    private readonly eps: number,
    /** Frequency bins after the two convs (the flatten is [T2, fOut * channels[1]]). */
    readonly fOut: number,
  ) {}

  /** mel [T, nMel] -> [T2, fOut * C1] (frequency-major, channel-minor) and T2. */
  forward(mel: Float32Array, T: number, nMel: number): { x: Float32Array; T: number } {
    let x = mel, h = T, w = nMel;
    for (let i = 0; i < 2; i++) {
      const spec = this.specs[i]!;
      const r = conv2d(x, h, w, this.weights[i]!, spec);
      cumulativeGroupNorm(r.out, r.outH, r.outW, spec.cout, this.gammas[i]!, this.eps);
      for (let j = 0; j < r.out.length; j++) if (!(r.out[j]! > 0)) r.out[j] = 0; // ReLU
      x = r.out;
      h = r.outH;
      w = r.outW;
    }
    return { x, T: h };
  }

  static load(store: WeightStore, prefix: string, cfg: Gemma3nAudioConfig): Gemma3nSubsampler {
    const specs: Conv2dSpec[] = [];
    let f = cfg.nMel, cin = 1;
    for (let i = 0; i < 2; i++) {
      const [kh, kw] = cfg.kernels[i]!;
      const [sh, sw] = cfg.strides[i]!;
      specs.push({ cin, cout: cfg.channels[i]!, kh, kw, strideH: sh, strideW: sw, pad: [0, kh - 1, 1, 1] });
      f = Math.floor((f + 2 - kw) / sw) + 1;
      cin = cfg.channels[i]!;
    }
    const p = `${prefix}subsample_conv_projection`;
    const weights = specs.map((s, i) => loadConvKernel(store, `${p}.conv_${i}.conv.weight`, s)) as [Float32Array, Float32Array];
    const gammas = specs.map((s, i) => loadVector(store, `${p}.conv_${i}.norm.weight`, s.cout)) as [Float32Array, Float32Array];
    return new Gemma3nSubsampler(specs as [Conv2dSpec, Conv2dSpec], weights, gammas, cfg.groupNormEps, f);
  }
}
