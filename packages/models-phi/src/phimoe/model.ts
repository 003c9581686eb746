/**
 * PhiMoE forward pass (phimoe.md §4–§7): pre-LayerNorm layers (eps from rms_norm_eps), biased q/k/v/o
 * attention with LongRoPE (explicit mscales), and a sparse MoE block: router logits → sparsemixer
 * (top-2 with per-round threshold masks; weights used as they are, NOT renormalised) → SwitchGLU
 * experts (per-token gather for decode, grouped by expert for prefill, in @mlxcel/moe) → residual.
 * Final LayerNorm, lm_head with bias.
 */
import { sparsemixer, type Routing } from '@mlxcel/moe';
import { ops, type WeightStore } from '@mlxcel/tensor';
import { attendRuns, uniformAttention, type AttentionGeometry } from '../common/attention.js';
import type { Plan } from '../common/batch.js';
import { configParams, PhiModelBase } from '../common/model-base.js';
import { parsePhiMoEConfig, type PhiMoEConfig, type PhiMoEConfigOptions } from './config.js';
import { loadPhiMoEWeights, type PhiMoEWeights } from './weights.js';

const PREFILL_CHUNK = 512;

/** Called with each layer's routing decision over all rows of a step (tests, tracing). */
export type RoutingObserver = (layer: number, routing: Routing, plan: Plan) => void;

export class PhiMoEModel extends PhiModelBase {
  readonly cfg: PhiMoEConfig;
  private readonly w: PhiMoEWeights;
  private readonly geom: AttentionGeometry;
  /** Optional hook: receives every layer's routing (expert ids and weights per row). */
  routingObserver: RoutingObserver | null = null;

  constructor(raw: Record<string, unknown>, store: WeightStore, opts: PhiMoEConfigOptions = {}) {
    const cfg = parsePhiMoEConfig(raw, opts);
    const attention = uniformAttention(cfg);
    const w = loadPhiMoEWeights(store, cfg, raw);
    super({
      modelType: 'phimoe', family: 'phimoe', config: raw,
      ...configParams(cfg),
      layerCaches: attention.layerCaches,
      prefillChunk: PREFILL_CHUNK, stats: w.stats,
    });
    this.cfg = cfg;
    this.w = w;
    this.geom = attention.geom;
  }

  protected embed(ids: Int32Array): Float32Array {
    return this.w.embed.forward(ids);
  }

  protected layer(l: number, h: Float32Array, plan: Plan): void {
    const L = this.w.layers[l]!;
    const c = this.cfg;
    const M = plan.rows;
    const a = L.inputNorm.forward(h, c.hidden_size);
    const att = attendRuns(l, L.q.forward(a, M), L.k.forward(a, M), L.v.forward(a, M), plan.runs, this.geom);
    ops.add(h, L.o.forward(att, M), h);
    const m = L.postNorm.forward(h, c.hidden_size);
    const routing = sparsemixer(L.router.forward(m, M), c.num_local_experts, c.num_experts_per_tok, c.router_jitter_noise);
    this.routingObserver?.(l, routing, plan);
    ops.add(h, L.experts.forward(m, M, routing.ids, routing.weights), h);
  }

  protected head(x: Float32Array, rows: number): Float32Array {
    return this.w.lmHead.forward(this.w.norm.forward(x, this.cfg.hidden_size), rows);
  }
}
