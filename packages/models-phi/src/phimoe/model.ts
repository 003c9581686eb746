/**
 * The PhiMoE (Phi-3.5-MoE) model, the whole forward pass in one place (huggingface/transformers
 * `models/phimoe/modeling_phimoe.py`: `PhimoeModel.forward`, `PhimoeDecoderLayer.forward`,
 * `PhimoeSparseMoeBlock.forward`; docs/architecture/phimoe.md §4):
 *   embed → every pre-LayerNorm decoder layer (biased q/k/v/o attention with LongRoPE and explicit
 *   mscales; sparse MoE block: router logits → sparsemixer (top-2 with per-round threshold masks;
 *   weights used as they are, NOT renormalised) → SwitchGLU experts → residual)
 * then models-core's LmHead: final LayerNorm → lm_head with bias. Shapes: N rows, H = hidden_size,
 * nH / nKV heads of D, E experts.
 */
import { sparsemixer, type Routing } from '@mlxcel/moe';
import { EMBEDDINGS_NAME, LmHead, runLayers, type HiddenStateTap } from '@mlxcel/models-core';
import { ops, type WeightStore } from '@mlxcel/tensor';
import { phiAttention, uniformAttention } from '../common/attention.js';
import type { PhiLayout } from '../common/batch.js';
import { PhiModelBase } from '../common/model-base.js';
import { parsePhiMoEConfig, type PhiMoEConfig, type PhiMoEConfigOptions } from './config.js';
import { loadPhiMoEWeights, type PhiMoELayer, type PhiMoEWeights } from './weights.js';

const PREFILL_CHUNK = 512;

/** Called with each layer's routing decision over all rows of a step (tests, tracing). */
export type RoutingObserver = (layer: number, routing: Routing, layout: PhiLayout) => void;

export class PhiMoEModel extends PhiModelBase {
  readonly cfg: PhiMoEConfig;
  private readonly w: PhiMoEWeights;
  /** Optional hook: receives every layer's routing (expert ids and weights per row). */
  routingObserver: RoutingObserver | null = null;

  constructor(raw: Record<string, unknown>, store: WeightStore, opts: PhiMoEConfigOptions = {}) {
    const cfg = parsePhiMoEConfig(raw, opts);
    const w = loadPhiMoEWeights(store, cfg, raw);
    super(raw, cfg, new LmHead(w.norm, w.lmHead), uniformAttention(cfg), PREFILL_CHUNK, w.stats);
    this.cfg = cfg;
    this.w = w;
  }

  protected finalHiddenStates(b: PhiLayout, tap: HiddenStateTap | undefined): Float32Array {
    const H = this.cfg.hidden_size;
    const residual = this.w.embed.forward(b.ids); // [N, H]
    tap?.(EMBEDDINGS_NAME, residual, H);
    // Each layer updates the residual in place.
    return runLayers(residual, this.numLayers, (l, h) => this.decoderLayer(l, this.w.layers[l]!, h, b), tap, H);
  }

  /** One decoder layer, updating the residual h [N, H] in place (and returning it). */
  private decoderLayer(l: number, L: PhiMoELayer, h: Float32Array, b: PhiLayout): Float32Array {
    const c = this.cfg, H = c.hidden_size;
    const N = b.n;
    const attnIn = L.inputNorm.forward(h, H); // [N, H]
    const attn = phiAttention(l, L.q.forward(attnIn, N), L.k.forward(attnIn, N), L.v.forward(attnIn, N), b, this.geom); // [N, nH·D]
    ops.add(h, L.o.forward(attn, N), h);
    const moeIn = L.postNorm.forward(h, H); // [N, H]
    const routing = sparsemixer(L.router.forward(moeIn, N), c.num_local_experts, c.num_experts_per_tok, c.router_jitter_noise); // [N, k] ids + weights
    this.routingObserver?.(l, routing, b);
    return ops.add(h, L.experts.forward(moeIn, N, routing.ids, routing.weights), h);
  }
}
