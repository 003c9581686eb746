/**
 * The Gemma 3n text model (gemma3n.md §3): embed → PLE → AltUp expand → layers → AltUp collapse →
 * norm → tied head → soft-cap. Serves `gemma3n` (multimodal checkpoints; towers ignored, multimodal
 * rows arrive as embedding overrides) and `gemma3n_text`.
 */
import { ops } from '@mlxcel/tensor';
import type { BatchLayout } from '../common/batch.js';
import { embedBatch } from '../common/embed.js';
import { GemmaModelBase } from '../common/model-base.js';
import { perLayerInjection, splitPerLayer } from '../common/ple.js';
import { altupCollapse, altupExpand } from './altup.js';
import type { Gemma3nConfig } from './config.js';
import type { Gemma3nLayer, Gemma3nWeights } from './weights.js';

export class Gemma3nModel extends GemmaModelBase {
  constructor(config: Readonly<Record<string, unknown>>, readonly cfg: Gemma3nConfig, readonly w: Gemma3nWeights) {
    super(config, cfg, w, {
      nKvHeads: cfg.layerTypes.map(() => cfg.numKvHeads),
      headDims: cfg.layerTypes.map(() => cfg.headDim),
    });
  }

  /** The PLE token component of `ids` (what a multimodal front-end may pass as `perLayerInputs`). */
  perLayerTokenInputs(ids: Int32Array, overriddenRows?: Int32Array): Float32Array {
    return this.w.ple.tokenComponent(ids, overriddenRows);
  }

  protected hidden(b: BatchLayout): Float32Array {
    const { hiddenSize: H, numLayers: NL, hiddenSizePerLayerInput: P } = this.cfg;
    const N = b.n;
    const e = embedBatch(this.w.embed, b);
    this.probe.check('the embedding (embed_tokens)', e);
    const ple = splitPerLayer(this.w.ple.forward(e, b), N, NL, P);
    ple.forEach((p, l) => this.probe.check(`the per-layer input of layer ${l} (embed_tokens_per_layer / per_layer_model_projection)`, p));
    let X = altupExpand(e, N, H, this.w.altupProjections);
    this.w.layers.forEach((layer, l) => {
      X = this.layer(layer, l, X, ple[l]!, b);
    });
    return altupCollapse(X, N, H, this.w.altupUnembed);
  }

  /** One decoder layer over the K streams (gemma3n.md §7). */
  private layer(L: Gemma3nLayer, l: number, X: Float32Array[], pleL: Float32Array, b: BatchLayout): Float32Array[] {
    const H = this.cfg.hiddenSize, N = b.n;
    const pred = L.altup.predict(X, N);
    const act = pred[0]!;
    const xn = L.inputNorm.forward(act, H);

    // Laurel: xn + RMSNorm(R(L(xn))) (§7.2).
    const lr = L.laurelRight.forward(L.laurelLeft.forward(xn, N), N);
    const laurel = ops.add(xn, L.postLaurelNorm.forward(lr, H, lr));

    this.probe.check(`layer ${l} AltUp prediction (layers.${l}.altup.*)`, act);
    const attn = L.attn.forward(xn, b, b.seqs.map((s) => s.state.caches[l]!));
    this.probe.check(`layer ${l} self_attn output (layers.${l}.self_attn.*)`, attn);
    this.probe.check(`layer ${l} laurel output (layers.${l}.laurel.*)`, laurel);
    L.postAttnNorm.forward(attn, H, attn);
    // s = (act + att + laurel) / sqrt(2)
    const s = ops.add(ops.add(act, attn, attn), laurel, attn);
    ops.scale(s, Math.SQRT1_2, 0, s);

    const m = L.mlp.forward(L.preFfNorm.forward(s, H), N);
    this.probe.check(`layer ${l} MLP output (layers.${l}.mlp.*)`, m);
    const y = ops.add(s, L.postFfNorm.forward(m, H, m), m);

    const corr = L.altup.correct(pred, y, N);
    // Per-layer input injection (§7.4): v = RMSNorm(W_proj (gelu(W_g f) ⊙ ple_l)), added to streams 1..K−1.
    const v = perLayerInjection(L.pliGate, L.pliProjection, L.postPliNorm, L.altup.scaledActive(corr), pleL, N, H);
    for (let k = 1; k < corr.length; k++) ops.add(corr[k]!, v, corr[k]!);
    this.probe.check(`layer ${l} output (AltUp correction / per-layer input gate of layers.${l})`, corr);
    return corr;
  }
}
