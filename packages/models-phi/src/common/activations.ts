/** Gated MLP activations that read a fused projection output. */
import { floats, ops } from '@mlxcel/tensor';

/**
 * SwiGLU over a fused [gate; up] projection whose two halves are contiguous column blocks
 * (Phi-3 `gate_up_proj`, docs/architecture/phi3.md §2.1): out[r, i] = SiLU(gu[r, i]) · gu[r, I + i],
 * one native pass (SiLU in f32 as the kernels compute it everywhere else).
 */
export function swigluHalves(gu: Float32Array, M: number, I: number, out?: Float32Array): Float32Array {
  return ops.gatedAct(gu, M, I, 'silu', out);
}

/**
 * Phi-3-small GeGELU (docs/architecture/phi3small.md §2.2). The up projection interleaves its two halves: even columns
 * a (the "gelu" input), odd columns b (the linear input). With limit λ (null = no clamp):
 * a' = min(a, λ), b' = clamp(b, −λ, λ), ±∞ left untouched in both; out = a'·σ(1.702·a')·(b' + 1).
 * Note a is clamped from above only.
 */
export function gegelu(u: Float32Array, M: number, F: number, limit: number | null): Float32Array {
  const out = floats(M * F);
  for (let r = 0; r < M; r++) {
    const u0 = r * 2 * F, o0 = r * F;
    for (let i = 0; i < F; i++) {
      let a = u[u0 + 2 * i]!;
      let b = u[u0 + 2 * i + 1]!;
      if (limit !== null) {
        if (Number.isFinite(a)) a = Math.min(a, limit);
        if (Number.isFinite(b)) b = Math.max(-limit, Math.min(b, limit));
      }
      out[o0 + i] = (a / (1 + Math.exp(-1.702 * a))) * (b + 1);
    }
  }
  return out;
}
