/**
 * The conformer's chunked local self-attention with relative positions, in its banded form
 * (docs/architecture/audio.md §5.3): for query t, keys s inside the model's window (LocalWindow), valid, inside [0, T);
 * logit = q_t.k_s + q_t.E[t - s], soft-capped, softmax. The blocked reference (chunks of 12 with a
 * 24-frame context and a "relative shift") admits exactly these keys with exactly these terms, so the
 * band is the same function at a fraction of the cost (<= 13 keys per query instead of 24).
 *
 * E[dist] comes from a table of relative-position rows: row r is the timing signal of position
 * relPositions[r], projected by the model's pos_proj / relative_k_proj, and sits at distance
 * relDist0 - r (the reference's relative shift puts row r at distance P - r, P = context_left - 1).
 */
import * as native from '@mlxcel/core-native';
import { ops } from '@mlxcel/tensor';
import type { Projection } from '@mlxcel/models-core';
import { timingSignal } from './layers.js';
import type { LocalWindow } from './window.js';

export interface LocalAttentionParams {
  q: Projection;
  k: Projection;
  v: Projection;
  /** Projects timing signals [R, D] to relative keys [R, D] (no bias). */
  rel: Projection;
  nHeads: number;
  headDim: number;
  /** Per-channel query multiplier [headDim] (hd^-0.5 / ln 2 * softplus(per_dim_scale)). */
  qScale: Float32Array;
  /** Per-channel key multiplier [headDim], or null. */
  kScale: Float32Array | null;
  /** Positions whose timing signals build the relative table, row order. */
  relPositions: readonly number[];
  /** Distance of table row 0 (row r holds distance relDist0 - r). */
  relDist0: number;
  softcap: number;
}

export class LocalRelAttention {
  private readonly relTable: Float32Array;
  private readonly qMul: Float32Array;
  private readonly kMul: Float32Array | null;

  constructor(readonly p: LocalAttentionParams) {
    const D = p.nHeads * p.headDim;
    // The relative keys depend only on the weights: project the timing signal once.
    this.relTable = p.rel.forward(timingSignal(p.relPositions, D), p.relPositions.length);
    this.qMul = tile(p.qScale, p.nHeads);
    this.kMul = p.kScale ? tile(p.kScale, p.nHeads) : null;
  }

  /** x [T, D] -> attention context [T, D] (heads concatenated), before the output projection. */
  forward(x: Float32Array, T: number, valid: Uint8Array, window: LocalWindow): Float32Array {
    const { nHeads, headDim, relPositions, relDist0, softcap } = this.p;
    const q = ops.mul(this.p.q.forward(x, T), this.qMul);
    let k = this.p.k.forward(x, T);
    if (this.kMul) k = ops.mul(k, this.kMul);
    const v = this.p.v.forward(x, T);
    const out = new Float32Array(T * nHeads * headDim);
    native.localAttention({
      q, k, v, n: T, nHeads, headDim,
      rel: this.relTable, nRel: relPositions.length, relDist0,
      valid, maxPast: window.maxPast, maxFuture: window.maxFuture, softcap, out,
    });
    return out;
  }
}

function tile(v: Float32Array, n: number): Float32Array {
  const out = new Float32Array(v.length * n);
  for (let i = 0; i < n; i++) out.set(v, i * v.length);
  return out;
}
