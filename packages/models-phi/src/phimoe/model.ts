/**
 * The PhiMoE (Phi-3.5-MoE) model: its decoder layer (huggingface/transformers
 * `models/phimoe/modeling_phimoe.py`: `PhimoeModel.forward`, `PhimoeDecoderLayer.forward`,
 * `PhimoeSparseMoeBlock.forward`; docs/architecture/phimoe.md §4):
 *   embed → every pre-LayerNorm decoder layer (biased q/k/v/o attention with LongRoPE and explicit
 *   mscales; sparse MoE block: router logits → sparsemixer (top-2 with per-round threshold masks;
 *   weights used as they are, NOT renormalised) → SwitchGLU experts → residual)
 * then models-core's LmHead: final LayerNorm → lm_head with bias (the embed → layers loop is
 * common/model-base.ts). Shapes: N rows, H = hidden_size, nH / nKV heads of D, E experts.
 */
import { sparsemixer, type Routing } from '@mlxcel/moe';
import { Linear, ops, type WeightStore } from '@mlxcel/tensor';
import { phiAttention, uniformAttention } from '../common/attention.js';
import type { PhiLayout } from '../common/batch.js';
import { PhiModelBase } from '../common/model-base.js';
import { parsePhiMoEConfig, type PhiMoEConfig, type PhiMoEConfigOptions } from './config.js';
import { loadPhiMoEWeights, type PhiMoELayer, type PhiMoEWeights } from './weights.js';

const PREFILL_CHUNK = 512;

/** Called with each layer's routing decision over all rows of a step (tests, tracing). */
export type RoutingObserver = (layer: number, routing: Routing, layout: PhiLayout) => void;

export class PhiMoEModel extends PhiModelBase<PhiMoEConfig, PhiMoEWeights> {
  /** Optional hook: receives every layer's routing (expert ids and weights per row). */
  routingObserver: RoutingObserver | null = null;

  constructor(raw: Record<string, unknown>, store: WeightStore, opts: PhiMoEConfigOptions = {}) {
    const cfg = parsePhiMoEConfig(raw, opts);
    super(raw, cfg, loadPhiMoEWeights(store, cfg, raw), { attention: uniformAttention(cfg), prefillChunk: PREFILL_CHUNK });
  }

  /** One decoder layer, updating the residual h [N, H] in place (and returning it). */
  protected decoderLayer(l: number, h: Float32Array, b: PhiLayout): Float32Array {
    const L: PhiMoELayer = this.w.layers[l]!;
    const c = this.cfg, H = c.hidden_size;
    const N = b.n;
    const attnIn = L.inputNorm.forward(h, H); // [N, H]
    const [q, k, v] = Linear.forwardShared([L.q, L.k, L.v], attnIn, N) as [Float32Array, Float32Array, Float32Array]; // one pass in decode
    const attn = phiAttention(l, q, k, v, b, this.geom); // [N, nH·D]
    ops.add(h, L.o.forward(attn, N), h);
    const moeIn = L.postNorm.forward(h, H); // [N, H]
    const routing = sparsemixer(L.router.forward(moeIn, N), c.num_local_experts, c.num_experts_per_tok, c.router_jitter_noise); // [N, k] ids + weights
    this.routingObserver?.(l, routing, b);
    return ops.add(h, L.experts.forward(moeIn, N, routing.ids, routing.weights), h);
  }
}
