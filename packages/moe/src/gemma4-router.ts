/**
 * Gemma 4 router (spec docs/architecture/gemma4.md §9). It reads the post-attention residual h itself (NOT the
 * pre_feedforward_layernorm_2 output the experts read):
 *   z      = (RMS0(h) ⊙ router.scale) · H^−0.5          RMS0 = RMSNorm without weight, eps = rms_norm_eps
 *   logits = z · router.proj.weightᵀ                      [T, E]
 *   p      = softmax(logits) over all E experts
 *   top k by logit (lowest index on ties), w_r = p_r / Σ_top-k p   (renormalised)
 *   w_r   ← w_r · router.per_expert_scale[e_r]
 * Only the first two steps need weights; `gemma4Route` is the pure function over logits.
 */
import { loadVector, loadWeight, MlxcelError, ops, type LoadOptions, type Weight, type WeightStore } from '@mlxcel/tensor';
import type { Routing } from './routing.js';
import { softmaxTopK } from './softmax-topk.js';

/** Softmax over all experts, top k, renormalise, then multiply each weight by its expert's scale. */
export function gemma4Route(logits: Float32Array, numExperts: number, k: number, perExpertScale: Float32Array): Routing {
  if (perExpertScale.length !== numExperts)
    throw new MlxcelError('E_SHAPE', `gemma4Route: per_expert_scale has ${perExpertScale.length} values for ${numExperts} experts`);
  const r = softmaxTopK(logits, numExperts, k, { renormalize: true });
  for (let i = 0; i < r.weights.length; i++) r.weights[i] = r.weights[i]! * perExpertScale[r.ids[i]!]!;
  return r;
}

export class Gemma4Router {
  constructor(
    /** router.proj.weight [E, H] */
    readonly proj: Weight,
    /** router.scale [H] */
    readonly scale: Float32Array,
    /** router.per_expert_scale [E] */
    readonly perExpertScale: Float32Array,
    readonly topK: number,
    readonly eps: number,
  ) {
    const E = proj.rows, H = proj.cols;
    if (scale.length !== H) throw new MlxcelError('E_SHAPE', `Gemma4Router: router.scale has ${scale.length} values, router.proj has ${H} inputs`);
    if (perExpertScale.length !== E)
      throw new MlxcelError('E_SHAPE', `Gemma4Router: router.per_expert_scale has ${perExpertScale.length} values, router.proj has ${E} experts`);
    if (!Number.isInteger(topK) || topK < 1 || topK > E)
      throw new MlxcelError('E_CONFIG', `Gemma4Router: top_k_experts = ${topK} must be an integer in 1..${E} (num_experts)`);
  }

  get numExperts(): number {
    return this.proj.rows;
  }
  get hidden(): number {
    return this.proj.cols;
  }

  /** Router logits [T, E] from the un-normalised residual h [T, H], in f32 in the order HF computes them. */
  logits(h: Float32Array, T: number): Float32Array {
    const H = this.hidden;
    if (h.length < T * H) throw new MlxcelError('E_SHAPE', `Gemma4Router.logits: h has ${h.length} values, expected ${T} x ${H}`);
    const x = h.length === T * H ? h : h.subarray(0, T * H);
    const z = ops.scale(ops.rmsNorm(x, H, this.scale, this.eps), H ** -0.5);
    return ops.matmul(z, T, this.proj);
  }

  route(h: Float32Array, T: number): Routing {
    return gemma4Route(this.logits(h, T), this.numExperts, this.topK, this.perExpertScale);
  }

  /**
   * Loads `${prefix}.router.{proj.weight, scale, per_expert_scale}` (prefix = the decoder layer, e.g.
   * `model.language_model.layers.3`); proj may be MLX-quantized.
   */
  static load(store: WeightStore, prefix: string, opts: { numExperts: number; topK: number; hidden: number; eps: number } & LoadOptions): Gemma4Router {
    const proj = loadWeight(store, `${prefix}.router.proj`, opts);
    if (proj.rows !== opts.numExperts || proj.cols !== opts.hidden)
      throw new MlxcelError('E_SHAPE', `${prefix}.router.proj.weight: shape [${proj.rows}, ${proj.cols}] but num_experts = ${opts.numExperts}, hidden_size = ${opts.hidden}`);
    const scale = loadVector(store, `${prefix}.router.scale`, opts.hidden);
    const pes = loadVector(store, `${prefix}.router.per_expert_scale`, opts.numExperts);
    return new Gemma4Router(proj, scale, pes, opts.topK, opts.eps);
  }
}
