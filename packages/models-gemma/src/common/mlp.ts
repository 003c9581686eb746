/**
 * The Gemma GeGLU MLP: down( gelu_tanh(gate x) ⊙ up x ) (HF `Gemma3nTextMLP.forward`), with Gemma 3n's
 * optional activation sparsity on the gate (`Gemma3nTextMLP._gaussian_topk`).
 */
import { ScratchBuffers } from '@mlxcel/models-core';
import { Linear, ops } from '@mlxcel/tensor';
import { normalQuantile } from './normal-quantile.js';

/**
 * Gaussian top-k in place over rows of width `dim`: g ← max(g − (μ + σ·z), 0) with σ the POPULATION
 * std (ddof 0, as HF `unbiased=False`; llama.cpp's N−1 is wrong) and z = Φ⁻¹(s) in full precision
 * (engine policy: f32 activations use exact constants; docs/architecture/gemma3n.md §7.3).
 */
export function gaussianTopK(g: Float32Array, dim: number, z: number): void {
  ops.gaussianTopK(g, dim, z); // one native pass per row (statistics in double)
}

/** gate / up outputs ([N, I] each, the largest intermediates of a Gemma layer), shared by every MLP: they never outlive forward(). */
const scratch = new ScratchBuffers();

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
    const I = this.intermediate;
    // gate and up over the same x: one pass over both weights in decode.
    const [g, u] = Linear.forwardShared([this.gate, this.up], x, N, [scratch.take('gate', N * I), scratch.take('up', N * I)]) as [Float32Array, Float32Array]; // [N, I] x 2
    if (this.z !== null) gaussianTopK(g, I, this.z);
    ops.geluTanh(g, g);
    ops.mul(g, u, g);
    return this.down.forward(g, N);
  }
}
