/**
 * Gemma3nMultimodalEmbedder for vision: soft tokens e = RMS0(RN_w(t; soft_embedding_norm) · W_projᵀ),
 * t already × √hidden; hard tokens (ids in the vision vocabulary) e = RMS0(RN_w(E[id − offset];
 * hard_embedding_norm) · W_projᵀ). Neither is multiplied by √H of the text model.
 */
import { WeightLoader } from '@mlxcel/models-core';
import { Embedding, Linear, MlxcelError, ops, RMSNorm, type QuantConfig, type WeightStore } from '@mlxcel/tensor';
import type { Gemma3nVisionConfig } from './config.js';

export class Gemma3nVisionEmbedder {
  constructor(
    readonly cfg: Gemma3nVisionConfig,
    readonly table: Embedding,
    readonly hardNorm: RMSNorm,
    readonly softNorm: RMSNorm,
    readonly projection: Linear,
  ) {}

  private project(x: Float32Array, n: number): Float32Array {
    const y = this.projection.forward(x, n);
    return ops.rmsNorm(y, this.cfg.textHidden, null, this.cfg.eps, false, y);
  }

  /** tokens [n, hidden] (already × √hidden) -> [n, textHidden]. */
  soft(tokens: Float32Array, n: number): Float32Array {
    return this.project(this.softNorm.forward(tokens, this.cfg.hidden), n);
  }

  /** Ids in [vocabOffset, vocabOffset + vocabSize) -> [ids.length, textHidden]. */
  hard(ids: ArrayLike<number>): Float32Array {
    const { vocabOffset: o, vocabSize: V } = this.cfg;
    const rows = new Int32Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const r = ids[i]! - o;
      if (!(r >= 0 && r < V)) throw new MlxcelError('E_INPUT', `Gemma 3n vision: id ${ids[i]} is outside the vision vocabulary [${o}, ${o + V})`);
      rows[i] = r;
    }
    return this.project(this.hardNorm.forward(this.table.forward(rows), this.cfg.hidden), ids.length);
  }

  static load(store: WeightStore, p: string, cfg: Gemma3nVisionConfig, quant?: QuantConfig): Gemma3nVisionEmbedder {
    const ld = new WeightLoader(store, quant); // full names: the tower prefix is part of each path
    const table = Embedding.load(store, `${p}embedding`, { quant });
    if (table.numEmbeddings !== cfg.vocabSize || table.dim !== cfg.hidden)
      throw new MlxcelError('E_SHAPE', `${p}embedding.weight: [${table.numEmbeddings}, ${table.dim}] but vision_config gives [${cfg.vocabSize}, ${cfg.hidden}]`);
    return new Gemma3nVisionEmbedder(
      cfg,
      table,
      ld.rmsNorm(`${p}hard_embedding_norm`, cfg.hidden, cfg.eps),
      ld.rmsNorm(`${p}soft_embedding_norm`, cfg.hidden, cfg.eps),
      ld.linear(`${p}embedding_projection`, [cfg.textHidden, cfg.hidden]),
    );
  }
}
