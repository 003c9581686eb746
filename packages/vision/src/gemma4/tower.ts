/**
 * The Gemma 4 vision tower (HF Gemma4VisionModel) and its embedder (Gemma4MultimodalEmbedder):
 * patch embedding (2·(x − ½) · W_inᵀ + column/row position embeddings), L bidirectional encoder layers
 * with clippable linears, q/k/v norms and 2-D RoPE, padding keys masked; then the 3×3 position-aware
 * average pool over the patch grid, padding bins dropped, ×√D; the embedder RMS0 → projection.
 * Activations f32 throughout.
 */
import * as native from '@mlxcel/core-native';
import { WeightLoader, ClippableLinear, type Projection } from '@mlxcel/models-core';
import { Linear, MlxcelError, ops, RMSNorm, type QuantConfig, type WeightStore } from '@mlxcel/tensor';
import type { Gemma4Pixels } from '../processor/gemma4.js';
import type { Gemma4VisionConfig } from './config.js';
import { applyRope2d, rope2dPositions, rope2dTables, type Rope2dTables } from './rope2d.js';

class EncoderLayer {
  constructor(
    readonly inputNorm: RMSNorm,
    readonly q: Projection,
    readonly k: Projection,
    readonly v: Projection,
    readonly o: Projection,
    readonly qNorm: RMSNorm,
    readonly kNorm: RMSNorm,
    readonly postAttnNorm: RMSNorm,
    readonly preFfNorm: RMSNorm,
    readonly gate: Projection,
    readonly up: Projection,
    readonly down: Projection,
    readonly postFfNorm: RMSNorm,
  ) {}
}

export interface Gemma4TowerOutput {
  /** [maxPatches, D] after the patch embedder (positions added). */
  patchEmbeddings: Float32Array;
  /** [maxPatches, D] after the last encoder layer. */
  encoderOutput: Float32Array;
  /** [nTokens, D] pooled valid bins × √D (and standardized when configured). */
  tokens: Float32Array;
  nTokens: number;
  dim: number;
}

export class Gemma4VisionTower {
  private tables: Rope2dTables | null = null;

  private constructor(
    readonly cfg: Gemma4VisionConfig,
    private readonly inputProj: Linear,
    /** [2, positionEmbeddingSize, D]: plane 0 indexed by x (column), plane 1 by y (row). */
    private readonly posTable: Float32Array,
    private readonly layers: EncoderLayer[],
    private readonly std: { bias: Float32Array; scale: Float32Array } | null,
  ) {}

  forward(px: Gemma4Pixels): Gemma4TowerOutput {
    const { hidden: D, numHeads: nh, numKvHeads: nkv, headDim: hd, patchSize: p, positionEmbeddingSize: P, eps } = this.cfg;
    if (px.patchSize !== p) throw new MlxcelError('E_SHAPE', `Gemma 4 vision: pixels were patchified with patch size ${px.patchSize}, the tower's is ${p}`);
    const L = px.maxPatches;
    const pos = px.positions;
    // Patch embedder: h = (2·(x − 0.5)) · W_inᵀ, + table[0][x] + table[1][y] on real rows.
    const xin = ops.scale(px.pixelValues, 2, -1);
    const h = this.inputProj.forward(xin, L); // [L, D]
    const kPos = new Int32Array(L);
    for (let i = 0; i < L; i++) {
      const x = pos[2 * i]!, y = pos[2 * i + 1]!;
      const pad = x === -1 && y === -1;
      kPos[i] = pad ? -1 : i;
      if (pad) continue;
      if (x < 0 || y < 0 || x >= P || y >= P)
        throw new MlxcelError('E_SHAPE', `Gemma 4 vision: patch ${i} position (${x}, ${y}) is outside the ${P}-entry position table`);
      const rx = x * D, ry = (P + y) * D, r = i * D;
      for (let d = 0; d < D; d++) h[r + d]! += this.posTable[rx + d]! + this.posTable[ry + d]!;
    }
    const patchEmbeddings = h.slice();

    if (!this.tables || this.tables.rows < P + 1) this.tables = rope2dTables(hd, this.cfg.ropeTheta, P + 1);
    const qRope = rope2dPositions(pos, L, nh), kRope = nkv === nh ? qRope : rope2dPositions(pos, L, nkv);
    const qPos = new Int32Array(L);
    let x = h;
    for (const layer of this.layers) {
      const a = layer.inputNorm.forward(x, D);
      const q = layer.q.forward(a, L); // [L, nh, hd]
      const k = layer.k.forward(a, L); // [L, nkv, hd]
      const v = layer.v.forward(a, L); // [L, nkv, hd]
      layer.qNorm.forward(q, hd, q);
      layer.kNorm.forward(k, hd, k);
      ops.rmsNorm(v, hd, null, eps, false, v);
      applyRope2d(q, L, nh, hd, qRope, this.tables);
      applyRope2d(k, L, nkv, hd, kRope, this.tables);
      const att = new Float32Array(L * nh * hd);
      native.attention({ q, nQ: L, nHeads: nh, headDim: hd, qPos, k, v, kvDtype: 0, nKv: L, nKvHeads: nkv, kPos, scale: 1, causal: false, out: att });
      const o = layer.o.forward(att, L);
      layer.postAttnNorm.forward(o, D, o);
      ops.add(x, o, x);
      const f = layer.preFfNorm.forward(x, D);
      const g = layer.gate.forward(f, L);
      ops.geluTanh(g, g);
      ops.mul(g, layer.up.forward(f, L), g);
      const m = layer.down.forward(g, L);
      layer.postFfNorm.forward(m, D, m);
      ops.add(x, m, x);
    }
    const encoderOutput = x;
    const { tokens, nTokens } = this.pool(encoderOutput, px);
    return { patchEmbeddings, encoderOutput, tokens, nTokens, dim: D };
  }

  /**
   * HF Gemma4VisionPooler: padding rows zeroed; bin of patch (x, y) = ⌊x/k⌋ + (W/k)·⌊y/k⌋ with W the
   * patch-grid width; each bin = sum of its patches / k²; valid bins (≥ 1 patch) kept in order; × √D.
   */
  private pool(hs: Float32Array, px: Gemma4Pixels): { tokens: Float32Array; nTokens: number } {
    const D = this.cfg.hidden, L = px.maxPatches, pos = px.positions;
    const k = this.cfg.poolingKernel;
    const outLen = Math.floor(L / (k * k));
    let kk = k;
    if (L === outLen) kk = 1;
    let maxX = 0;
    for (let i = 0; i < L; i++) maxX = Math.max(maxX, pos[2 * i]!);
    maxX += 1;
    const perRow = Math.floor(maxX / kk);
    const bins = new Float32Array(outLen * D);
    const count = new Int32Array(outLen);
    const inv = Math.fround(1 / (kk * kk));
    for (let i = 0; i < L; i++) {
      const x = pos[2 * i]!, y = pos[2 * i + 1]!;
      if (x === -1 && y === -1) continue;
      const b = Math.floor(x / kk) + perRow * Math.floor(y / kk);
      if (b < 0 || b >= outLen) throw new MlxcelError('E_SHAPE', `Gemma 4 vision pooler: patch (${x}, ${y}) falls in bin ${b} outside [0, ${outLen})`);
      count[b]!++;
      for (let d = 0; d < D; d++) bins[b * D + d]! += hs[i * D + d]!;
    }
    let n = 0;
    for (let b = 0; b < outLen; b++) if (count[b]! > 0) n++;
    const tokens = new Float32Array(n * D);
    const s = Math.fround(Math.sqrt(D));
    for (let b = 0, j = 0; b < outLen; b++) {
      if (count[b] === 0) continue;
      for (let d = 0; d < D; d++) tokens[j * D + d] = Math.fround(Math.fround(bins[b * D + d]! * inv) * s);
      j++;
    }
    if (this.std) {
      for (let j = 0; j < n; j++)
        for (let d = 0; d < D; d++) tokens[j * D + d] = (tokens[j * D + d]! - this.std.bias[d]!) * this.std.scale[d]!;
    }
    return { tokens, nTokens: n };
  }

  static load(store: WeightStore, prefix: string, cfg: Gemma4VisionConfig, quant?: QuantConfig): Gemma4VisionTower {
    const ld = new WeightLoader(store, quant); // full names: the tower prefix is part of each path
    const { hidden: D, numHeads: nh, numKvHeads: nkv, headDim: hd, intermediate: I, patchSize: p, positionEmbeddingSize: P, eps } = cfg;
    const inputProj = ld.linear(`${prefix}patch_embedder.input_proj`, [D, 3 * p * p]);
    const tname = `${prefix}patch_embedder.position_embedding_table`;
    const posTable = ld.vector(tname, 2 * P * D);
    const proj = (name: string, shape: [number, number]): Projection => {
      const cl = ClippableLinear.load(store, name, { quant, shape });
      // use_clipped_linears false: HF builds plain linears and never reads the bounds.
      return cfg.useClippedLinears ? cl : { inFeatures: cl.inFeatures, outFeatures: cl.outFeatures, forward: (x, r) => cl.linear.forward(x, r) };
    };
    const norm = (name: string, dim: number) => ld.rmsNorm(name, dim, eps);
    const layers: EncoderLayer[] = [];
    for (let l = 0; l < cfg.numLayers; l++) {
      const b = `${prefix}encoder.layers.${l}.`;
      layers.push(
        new EncoderLayer(
          norm(`${b}input_layernorm`, D),
          proj(`${b}self_attn.q_proj`, [nh * hd, D]),
          proj(`${b}self_attn.k_proj`, [nkv * hd, D]),
          proj(`${b}self_attn.v_proj`, [nkv * hd, D]),
          proj(`${b}self_attn.o_proj`, [D, nh * hd]),
          norm(`${b}self_attn.q_norm`, hd),
          norm(`${b}self_attn.k_norm`, hd),
          norm(`${b}post_attention_layernorm`, D),
          norm(`${b}pre_feedforward_layernorm`, D),
          proj(`${b}mlp.gate_proj`, [I, D]),
          proj(`${b}mlp.up_proj`, [I, D]),
          proj(`${b}mlp.down_proj`, [D, I]),
          norm(`${b}post_feedforward_layernorm`, D),
        ),
      );
    }
    if (store.has(`${prefix}encoder.layers.${cfg.numLayers}.input_layernorm.weight`))
      throw new MlxcelError('E_CONFIG', `${prefix}encoder has more layers than vision_config.num_hidden_layers ${cfg.numLayers}`);
    const std = cfg.standardize ? { bias: ld.vector(`${prefix}std_bias`, D), scale: ld.vector(`${prefix}std_scale`, D) } : null;
    return new Gemma4VisionTower(cfg, inputProj, posTable, layers, std);
  }
}

/** Gemma4MultimodalEmbedder: e = RMS0(x) · W_projᵀ, no √H. */
export class Gemma4VisionEmbedder {
  constructor(readonly projection: Linear, readonly eps: number) {}
  forward(tokens: Float32Array, n: number): Float32Array {
    const x = ops.rmsNorm(tokens, this.projection.inFeatures, null, this.eps);
    return this.projection.forward(x, n);
  }
  static load(store: WeightStore, prefix: string, cfg: Gemma4VisionConfig, quant?: QuantConfig): Gemma4VisionEmbedder {
    const ld = new WeightLoader(store, quant); // full names: the tower prefix is part of each path
    return new Gemma4VisionEmbedder(ld.linear(`${prefix}embedding_projection`, [cfg.textHidden, cfg.hidden]), cfg.eps);
  }
}
