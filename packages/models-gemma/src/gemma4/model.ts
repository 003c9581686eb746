/**
 * The Gemma 4 text model, the whole forward pass in one place (huggingface/transformers
 * `models/gemma4/modeling_gemma4.py`: `Gemma4TextModel.forward`, `Gemma4TextDecoderLayer.forward`;
 * docs/architecture/gemma4.md §8):
 *   embed → [per-layer inputs] → every decoder layer
 * then models-core's LmHead: final norm → head → soft-cap. Serves `gemma4` (multimodal checkpoints;
 * towers ignored, multimodal rows arrive as embedding overrides) and `gemma4_text`; dense, MoE and
 * E-series (per-layer inputs, KV sharing) alike. The residual stream, attention scores and router
 * logits stay f32 whatever the stored dtype. Shapes: N rows, H = hidden_size, P = hidden_size_per_layer_input.
 */
import { EMBEDDINGS_NAME, runLayers, type HiddenStateTap } from '@mlxcel/models-core';
import { ops } from '@mlxcel/tensor';
import type { GemmaLayout } from '../common/batch.js';
import { embedBatch } from '../common/embed.js';
import { GemmaModelBase } from '../common/model-base.js';
import { perLayerInjection, splitPerLayer } from '../common/ple.js';
import type { Gemma4Config } from './config.js';
import type { Gemma4Layer, Gemma4Weights } from './weights.js';

/**
 * 512-token prefill chunks: the GEMMs run at M = 512 (the integer GEMM amortizes its weight repack over
 * 512 rows; M = 256 measured 7-10 % slower end to end, Gemma 4 E2B, 8 layers, 1024-token prompt) while
 * the sliding rings grow only to window - 1 + 512 slots.
 */
const PREFILL_CHUNK = 512;

export class Gemma4Model extends GemmaModelBase {
  /** Config / checkpoint oddities found at load (absent layer_types, KV-head rule fallbacks). */
  readonly warnings: readonly string[];

  constructor(config: Readonly<Record<string, unknown>>, readonly cfg: Gemma4Config, readonly w: Gemma4Weights) {
    super(config, cfg, w, w.layers.map((L) => L.attn.geo), PREFILL_CHUNK);
    this.warnings = w.warnings;
  }

  /** The PLE token component of `ids` (E-series only; null otherwise). */
  perLayerTokenInputs(ids: Int32Array, overriddenRows?: Int32Array): Float32Array | null {
    return this.w.ple ? this.w.ple.tokenComponent(ids, overriddenRows) : null;
  }

  protected finalHiddenStates(b: GemmaLayout, tap: HiddenStateTap | undefined): Float32Array {
    const { hiddenSize: H, numLayers: NL, hiddenSizePerLayerInput: P } = this.cfg;
    const embeddings = embedBatch(this.w.embed, b); // [N, H], × sqrt(H), overrides applied
    tap?.(EMBEDDINGS_NAME, embeddings, H);
    const perLayerInputs = this.w.ple ? splitPerLayer(this.w.ple.forward(embeddings, b), b.n, NL, P) : null; // NL × [N, P]
    const layerStep = (l: number, x: Float32Array) => this.decoderLayer(this.w.layers[l]!, x, perLayerInputs ? perLayerInputs[l]! : null, b);
    return runLayers(embeddings, NL, layerStep, tap, H); // [N, H]
  }

  /** One decoder layer: [N, H] → [N, H]. */
  private decoderLayer(L: Gemma4Layer, x: Float32Array, pleL: Float32Array | null, b: GemmaLayout): Float32Array {
    const H = this.cfg.hiddenSize, N = b.n;
    const attn = L.attn.forward(L.inputNorm.forward(x, H), b); // [N, H]
    const afterAttn = ops.add(x, L.postAttnNorm.forward(attn, H, attn), attn); // [N, H]

    let ff: Float32Array; // [N, H]
    if (L.moe) ff = L.moe.forward(afterAttn, N, L.mlp, L.preFfNorm, L.postFfNorm);
    else {
      ff = L.mlp.forward(L.preFfNorm.forward(afterAttn, H), N);
      L.postFfNorm.forward(ff, H, ff);
    }
    const layerOut = ops.add(afterAttn, ff, afterAttn); // [N, H]

    if (L.pli && pleL) ops.add(layerOut, perLayerInjection(L.pli.gate, L.pli.projection, L.pli.norm, layerOut, pleL, N, H), layerOut);
    if (L.layerScalar !== 1) ops.scale(layerOut, L.layerScalar, 0, layerOut);
    return layerOut;
  }
}
