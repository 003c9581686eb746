/**
 * The Gemma 4 text model (gemma4.md §4–§10): embed → [PLE] → layers → norm → head → soft-cap.
 * Serves `gemma4` (multimodal checkpoints; towers ignored, multimodal rows arrive as embedding
 * overrides) and `gemma4_text`; dense, MoE and E-series (per-layer inputs, KV sharing) alike.
 * The residual stream, attention scores and router logits stay f32 whatever the stored dtype (§11).
 */
import { ops } from '@mlxcel/tensor';
import type { BatchLayout } from '../common/batch.js';
import { embedBatch } from '../common/embed.js';
import { GemmaModelBase } from '../common/model-base.js';
import { perLayerInjection, splitPerLayer } from '../common/ple.js';
import type { Gemma4Config } from './config.js';
import type { Gemma4Layer, Gemma4Weights } from './weights.js';

export class Gemma4Model extends GemmaModelBase {
  /** Config / checkpoint oddities found at load (absent layer_types, KV-head rule fallbacks). */
  readonly warnings: readonly string[];

  constructor(config: Readonly<Record<string, unknown>>, readonly cfg: Gemma4Config, readonly w: Gemma4Weights) {
    super(config, cfg, w, { nKvHeads: w.numKvHeads, headDims: cfg.headDims });
    this.warnings = w.warnings;
  }

  /** The PLE token component of `ids` (E-series only; null otherwise). */
  perLayerTokenInputs(ids: Int32Array, overriddenRows?: Int32Array): Float32Array | null {
    return this.w.ple ? this.w.ple.tokenComponent(ids, overriddenRows) : null;
  }

  protected hidden(b: BatchLayout): Float32Array {
    const { numLayers: NL, hiddenSizePerLayerInput: P } = this.cfg;
    let x = embedBatch(this.w.embed, b);
    this.probe.check('the embedding (embed_tokens)', x);
    const ple = this.w.ple ? splitPerLayer(this.w.ple.forward(x, b), b.n, NL, P) : null;
    this.w.layers.forEach((layer, l) => {
      x = this.layer(layer, l, x, ple ? ple[l]! : null, b);
    });
    return x;
  }

  /** One decoder layer (§8). */
  private layer(L: Gemma4Layer, l: number, x: Float32Array, pleL: Float32Array | null, b: BatchLayout): Float32Array {
    const H = this.cfg.hiddenSize, N = b.n;
    const attn = L.attn.forward(L.inputNorm.forward(x, H), b, b.seqs.map((s) => s.state.caches[l]!));
    this.probe.check(`layer ${l} self_attn output (layers.${l}.self_attn.*)`, attn);
    const h = ops.add(x, L.postAttnNorm.forward(attn, H, attn), attn);

    let m: Float32Array;
    if (L.moe) m = L.moe.forward(h, N, L.mlp, L.preFfNorm, L.postFfNorm);
    else {
      m = L.mlp.forward(L.preFfNorm.forward(h, H), N);
      L.postFfNorm.forward(m, H, m);
    }
    this.probe.check(`layer ${l} ${L.moe ? 'MLP / MoE' : 'MLP'} output (layers.${l}.${L.moe ? 'mlp.* / experts.*' : 'mlp.*'})`, m);
    ops.add(h, m, h);

    if (L.pli && pleL) ops.add(h, perLayerInjection(L.pli.gate, L.pli.projection, L.pli.norm, h, pleL, N, H), h);
    if (L.layerScalar !== 1) ops.scale(h, L.layerScalar, 0, h);
    this.probe.check(`layer ${l} output (per-layer input / layer_scalar of layers.${l})`, h);
    return h;
  }
}
