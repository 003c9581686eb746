/**
 * The Gemma 4 MoE feed-forward (docs/architecture/gemma4.md §9): the dense MLP and the routed experts run in parallel on
 * the post-attention residual h, and their normalized outputs are summed:
 *   h1 = RMSNorm_{post_ff_1}( MLP( RMSNorm_{pre_ff}(h) ) )
 *   router on the UN-normalized h (Gemma4Router from @mlxcel/moe: softmax, top-k, renormalize, per-expert scale)
 *   h2 = RMSNorm_{post_ff_2}( SwitchGLU( RMSNorm_{pre_ff_2}(h) ) )
 *   m  = RMSNorm_{post_ff}(h1 + h2)
 * Router and experts come from @mlxcel/moe; this file only wires them to the layer's norms.
 */
import type { WeightLoader } from '@mlxcel/models-core';
import { Gemma4Router, loadExperts, type SwitchGLU } from '@mlxcel/moe';
import { ops, type RMSNorm } from '@mlxcel/tensor';
import type { GemmaMLP } from '../common/mlp.js';
import type { Gemma4Config, Gemma4MoeConfig } from './config.js';

export class Gemma4MoeBlock {
  constructor(
    readonly router: Gemma4Router,
    readonly experts: SwitchGLU,
    readonly preFfNorm2: RMSNorm,
    readonly postFfNorm1: RMSNorm,
    readonly postFfNorm2: RMSNorm,
  ) {}

  /** h [N, H] → m [N, H] (before the residual add); `mlp` / `preFfNorm` / `postFfNorm` are the layer's. */
  forward(h: Float32Array, N: number, mlp: GemmaMLP, preFfNorm: RMSNorm, postFfNorm: RMSNorm): Float32Array {
    const H = this.router.hidden;
    const h1 = mlp.forward(preFfNorm.forward(h, H), N);
    this.postFfNorm1.forward(h1, H, h1);
    const r = this.router.route(h, N);
    const y = this.experts.forward(this.preFfNorm2.forward(h, H), N, r.ids, r.weights);
    this.postFfNorm2.forward(y, H, y);
    ops.add(h1, y, h1);
    return postFfNorm.forward(h1, H, h1);
  }
}

export function loadMoeBlock(ld: WeightLoader, p: string, cfg: Gemma4Config, moe: Gemma4MoeConfig): Gemma4MoeBlock {
  const H = cfg.hiddenSize, eps = cfg.eps;
  const block = ld.name(p.slice(0, -1)); // e.g. model.language_model.layers.3
  const router = Gemma4Router.load(ld.store, block, { numExperts: moe.numExperts, topK: moe.topK, hidden: H, eps, quant: ld.quant });
  ld.stats.streamed(router.proj);
  ld.stats.vector(router.scale.length);
  ld.stats.vector(router.perExpertScale.length);
  // HF fused `experts.gate_up_proj` / `experts.down_proj`, or mlx `experts.switch_glu.*` (detected by name).
  const experts = loadExperts(ld.store, block, 'auto', {
    numExperts: moe.numExperts, hidden: H, intermediate: moe.intermediate, activation: 'gelu_tanh', quant: ld.quant,
  });
  ld.stats.experts(3 * moe.numExperts * moe.intermediate * H, experts.nbytes, moe.topK, moe.numExperts); // only k of E experts are read per token
  return new Gemma4MoeBlock(
    router,
    experts,
    ld.rmsNorm(`${p}pre_feedforward_layernorm_2`, H, eps),
    ld.rmsNorm(`${p}post_feedforward_layernorm_1`, H, eps),
    ld.rmsNorm(`${p}post_feedforward_layernorm_2`, H, eps),
  );
}
