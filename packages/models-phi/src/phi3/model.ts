/**
 * The Phi-3 / Phi-3.5-mini / Phi-4-mini model: its decoder layer
 * (huggingface/transformers `models/phi3/modeling_phi3.py`: `Phi3Model.forward`,
 * `Phi3DecoderLayer.forward`; docs/architecture/phi3.md §3):
 *   embed → every pre-RMSNorm decoder layer (fused qkv, GQA attention with (partial) RoPE — LongRoPE
 *   short/long tables chosen per sequence —, fused gate_up SwiGLU MLP)
 * then models-core's LmHead: final RMSNorm → untied or tied head. No biases, no scaling of embeddings
 * or logits (the embed → layers loop is common/model-base.ts). Shapes: N rows, H = hidden_size,
 * nH / nKV heads of D, I = intermediate_size.
 */
import { ScratchBuffers } from '@mlxcel/models-core';
import { ops, type WeightStore } from '@mlxcel/tensor';
import { swigluHalves } from '../common/activations.js';
import { phiAttention, uniformAttention } from '../common/attention.js';
import type { PhiLayout } from '../common/batch.js';
import { PhiModelBase } from '../common/model-base.js';
import { splitColumns } from '../common/rows.js';
import { parsePhi3Config, type Phi3Config, type Phi3ConfigOptions } from './config.js';
import { loadPhi3Weights, type Phi3Layer, type Phi3Weights } from './weights.js';

/** Prefill chunk the engine should use (tokens); attention memory stays small at this size. */
const PREFILL_CHUNK = 512;

export class Phi3Model extends PhiModelBase<Phi3Config, Phi3Weights> {
  /** The layer's big intermediates, reused from layer to layer and call to call (see ScratchBuffers). */
  private readonly scratch = new ScratchBuffers();

  constructor(raw: Record<string, unknown>, store: WeightStore, opts: Phi3ConfigOptions = {}) {
    const cfg = parsePhi3Config(raw, opts);
    super(raw, cfg, loadPhi3Weights(store, cfg, raw), { attention: uniformAttention(cfg), prefillChunk: PREFILL_CHUNK });
  }

  /** One decoder layer, updating the residual h [N, H] in place (and returning it). */
  protected decoderLayer(l: number, h: Float32Array, b: PhiLayout): Float32Array {
    const L: Phi3Layer = this.w.layers[l]!;
    const { hidden_size: H, num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D, intermediate_size: I } = this.cfg;
    const N = b.n;
    const sc = this.scratch;
    const attnIn = L.inputNorm.forward(h, H, sc.take('norm', N * H)); // [N, H]
    const qkvW = (nH + 2 * nKV) * D;
    // q, k, v never outlive the layer either: RoPE rotates q and k in place, the cache copies k and v.
    const [q, k, v] = splitColumns(L.qkv.forward(attnIn, N, sc.take('qkv', N * qkvW)), N, [nH * D, nKV * D, nKV * D],
      [sc.take('q', N * nH * D), sc.take('k', N * nKV * D), sc.take('v', N * nKV * D)]); // [N, nH·D], [N, nKV·D] ×2
    const attn = phiAttention(l, q!, k!, v!, b, this.geom); // [N, nH·D]
    ops.add(h, L.o.forward(attn, N, sc.take('out', N * H)), h);
    const mlpIn = L.postNorm.forward(h, H, sc.take('norm', N * H)); // [N, H]
    const act = swigluHalves(L.gateUp.forward(mlpIn, N, sc.take('gateUp', N * 2 * I)), N, I, sc.take('act', N * I)); // [N, 2I] → [N, I]
    return ops.add(h, L.down.forward(act, N, sc.take('out', N * H)), h);
  }
}
