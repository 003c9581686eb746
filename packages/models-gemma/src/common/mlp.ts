/**
 * The Gemma GeGLU MLP: down( gelu_tanh(gate x) ⊙ up x ) (HF `Gemma3nTextMLP.forward`), with Gemma 3n's
 * optional activation sparsity on the gate (`Gemma3nTextMLP._gaussian_topk`).
 */
import { ops, type Linear } from '@mlxcel/tensor';
import { normalQuantile } from './normal-quantile.js';

/**
 * Gaussian top-k in place over rows of width `dim`: g ← max(g − (μ + σ·z), 0) with σ the POPULATION
 * std (ddof 0, as HF `unbiased=False`; llama.cpp's N−1 is wrong) and z = Φ⁻¹(s) in full precision
 * (engine policy: f32 activations use exact constants; docs/architecture/gemma3n.md §7.3).
 */
export function gaussianTopK(g: Float32Array, dim: number, z: number): void {
  const rows = g.length / dim;
  for (let r = 0; r < rows; r++) {
    const o = r * dim;
    let sum = 0;
    for (let i = 0; i < dim; i++) sum += g[o + i]!;
    const mean = sum / dim;
    let ss = 0;
    for (let i = 0; i < dim; i++) {
      const d = g[o + i]! - mean;
      ss += d * d;
    }
    const cutoff = mean + Math.sqrt(ss / dim) * z;
    for (let i = 0; i < dim; i++) {
      const x = g[o + i]! - cutoff;
      g[o + i] = x > 0 ? x : 0;
    }
  }
}

export class GemmaMLP {
  /** z = Φ⁻¹(sparsity) or null when the layer is dense. */
  private readonly z: number | null;
  constructor(readonly gate: Linear, readonly up: Linear, readonly down: Linear, sparsity = 0) {
    this.z = sparsity > 0 ? normalQuantile(sparsity) : null;
  }
  get intermediate(): number {
    return this.gate.outFeatures;
  }
  /** x [N, H] → [N, H]. */
  forward(x: Float32Array, N: number): Float32Array {
    const g = this.gate.forward(x, N); // [N, I]
    if (this.z !== null) gaussianTopK(g, this.intermediate, this.z);
    ops.geluTanh(g, g);
    const u = this.up.forward(x, N); // [N, I]
    ops.mul(g, u, g);
    return this.down.forward(g, N);
  }
}
