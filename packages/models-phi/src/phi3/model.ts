/**
 * Phi-3 / Phi-3.5-mini / Phi-4-mini forward pass (phi3.md §3): pre-RMSNorm decoder layers with fused
 * qkv and gate_up projections, GQA attention with (partial) RoPE — LongRoPE short/long tables chosen
 * per sequence — and an untied or tied output head. No biases, no scaling of embeddings or logits.
 */
import { ops, type WeightStore } from '@mlxcel/tensor';
import { swigluHalves } from '../common/activations.js';
import { attendRuns, uniformAttention, type AttentionGeometry } from '../common/attention.js';
import type { Plan } from '../common/batch.js';
import { configParams, PhiModelBase } from '../common/model-base.js';
import { splitColumns } from '../common/rows.js';
import { parsePhi3Config, type Phi3Config, type Phi3ConfigOptions } from './config.js';
import { loadPhi3Weights, type Phi3Weights } from './weights.js';

/** Prefill chunk the engine should use (tokens); attention memory stays small at this size. */
const PREFILL_CHUNK = 512;

export class Phi3Model extends PhiModelBase {
  readonly cfg: Phi3Config;
  private readonly w: Phi3Weights;
  private readonly geom: AttentionGeometry;

  constructor(raw: Record<string, unknown>, store: WeightStore, opts: Phi3ConfigOptions = {}) {
    const cfg = parsePhi3Config(raw, opts);
    const attention = uniformAttention(cfg);
    const w = loadPhi3Weights(store, cfg, raw);
    super({
      modelType: 'phi3', family: 'phi3', config: raw,
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
    const { hidden_size: H, num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D, intermediate_size: I } = this.cfg;
    const M = plan.rows;
    const a = L.inputNorm.forward(h, H);
    const [q, k, v] = splitColumns(L.qkv.forward(a, M), M, [nH * D, nKV * D, nKV * D]);
    const att = attendRuns(l, q!, k!, v!, plan.runs, this.geom);
    ops.add(h, L.o.forward(att, M), h);
    const m = L.postNorm.forward(h, H);
    const act = swigluHalves(L.gateUp.forward(m, M), M, I);
    ops.add(h, L.down.forward(act, M), h);
  }

  protected head(x: Float32Array, rows: number): Float32Array {
    return this.w.lmHead.forward(this.w.norm.forward(x, this.cfg.hidden_size), rows);
  }
}
