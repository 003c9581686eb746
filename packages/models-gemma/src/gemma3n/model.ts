/**
 * The Gemma 3n text model, the whole forward pass in one place (huggingface/transformers
 * `models/gemma3n/modeling_gemma3n.py`: `Gemma3nTextModel.forward`, `Gemma3nTextDecoderLayer.forward`;
 * docs/architecture/gemma3n.md §3):
 *   embed → per-layer inputs → AltUp expand to K streams → every decoder layer → AltUp collapse
 * then models-core's LmHead: final norm → tied head → soft-cap. Serves `gemma3n` (multimodal
 * checkpoints; towers ignored, multimodal rows arrive as embedding overrides) and `gemma3n_text`.
 * Shapes: N rows in the batch, H = hidden_size, P = hidden_size_per_layer_input, K = altup_num_inputs.
 */
import { EMBEDDINGS_NAME, runLayers, type HiddenStateTap } from '@mlxcel/models-core';
import { ops } from '@mlxcel/tensor';
import type { GemmaLayout } from '../common/batch.js';
import { embedBatch } from '../common/embed.js';
import { GemmaModelBase } from '../common/model-base.js';
import { perLayerInjection, splitPerLayer } from '../common/ple.js';
import { altupCollapse, altupExpand } from './altup.js';
import type { Gemma3nConfig } from './config.js';
import type { Gemma3nLayer, Gemma3nWeights } from './weights.js';

/**
 * 256-token prefill chunks: with AltUp's four [chunk, 2048] streams per layer, 512-token chunks measured
 * 4-6 % slower end to end (Gemma 3n E2B, 8 layers, 1024-token prompt), and the sliding rings stay small.
 */
const PREFILL_CHUNK = 256;

export class Gemma3nModel extends GemmaModelBase {
  constructor(config: Readonly<Record<string, unknown>>, readonly cfg: Gemma3nConfig, readonly w: Gemma3nWeights) {
    super(config, cfg, w, w.layers.map((L) => L.attn.geo), PREFILL_CHUNK);
  }

  /** The PLE token component of `ids` (what a multimodal front-end may pass as `perLayerInputs`). */
  perLayerTokenInputs(ids: Int32Array, overriddenRows?: Int32Array): Float32Array {
    return this.w.ple.tokenComponent(ids, overriddenRows);
  }

  protected finalHiddenStates(b: GemmaLayout, tap: HiddenStateTap | undefined): Float32Array {
    const { hiddenSize: H, numLayers: NL, hiddenSizePerLayerInput: P } = this.cfg;
    const N = b.n;
    const embeddings = embedBatch(this.w.embed, b); // [N, H], × sqrt(H), overrides applied
    tap?.(EMBEDDINGS_NAME, embeddings, H);
    const perLayerInputs = splitPerLayer(this.w.ple.forward(embeddings, b), N, NL, P); // NL × [N, P]
    const expanded = altupExpand(embeddings, N, H, this.w.altupProjections); // K × [N, H]
    const layerStep = (l: number, X: Float32Array[]) => this.decoderLayer(this.w.layers[l]!, X, perLayerInputs[l]!, b);
    const streams = runLayers(expanded, NL, layerStep, tap, H, (X) => X[0]!); // tapped: the active stream
    return altupCollapse(streams, N, H, this.w.altupUnembed); // [N, H]
  }

  /** One decoder layer over the K streams: K × [N, H] → K × [N, H]. */
  private decoderLayer(L: Gemma3nLayer, X: Float32Array[], pleL: Float32Array, b: GemmaLayout): Float32Array[] {
    const H = this.cfg.hiddenSize, N = b.n;
    const predicted = L.altup.predict(X, N); // K × [N, H]
    const active = predicted[0]!; // [N, H]
    const xn = L.inputNorm.forward(active, H); // [N, H]

    // LAuReL: xn + RMSNorm(R(L(xn))), rank R = laurel_rank.
    const lr = L.laurelRight.forward(L.laurelLeft.forward(xn, N), N); // [N, R] → [N, H]
    const laurel = ops.add(xn, L.postLaurelNorm.forward(lr, H, lr)); // [N, H]

    const attn = L.attn.forward(xn, b); // [N, H]
    L.postAttnNorm.forward(attn, H, attn);
    // attnGated = (active + attn + laurel) / sqrt(2)
    const attnGated = ops.add(ops.add(active, attn, attn), laurel, attn); // [N, H]
    ops.scale(attnGated, Math.SQRT1_2, 0, attnGated);

    const mlp = L.mlp.forward(L.preFfNorm.forward(attnGated, H), N); // [N, H]
    const layerOut = ops.add(attnGated, L.postFfNorm.forward(mlp, H, mlp), mlp); // [N, H]

    const corrected = L.altup.correct(predicted, layerOut, N); // K × [N, H]
    // Per-layer input injection: v = RMSNorm(W_proj (gelu(W_gate a) ⊙ ple_l)), added to streams 1..K−1.
    const injected = perLayerInjection(L.pliGate, L.pliProjection, L.postPliNorm, L.altup.scaledActive(corrected), pleL, N, H); // [N, H]
    for (let k = 1; k < corrected.length; k++) ops.add(corrected[k]!, injected, corrected[k]!);
    return corrected;
  }
}
