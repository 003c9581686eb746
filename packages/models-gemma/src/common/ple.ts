/**
 * Per-layer inputs (PLE), Gemma 3n and Gemma 4 E-series (HF `Gemma3nTextModel.get_per_layer_inputs` /
 * `project_per_layer_inputs`; docs/architecture/gemma3n.md §5):
 *   tok[i]  = embed_tokens_per_layer[id'_i] · sqrt(P)       id' = id if 0 ≤ id < vocab_size_per_layer_input, else 0;
 *                                                           multimodal (overridden) rows use id 0
 *   proj[i] = RMSNorm_{per_layer_projection_norm}( (e_i · W_plmᵀ) · H^−0.5 ) per P-slice, e = final embedding rows
 *   ple[i]  = (proj[i] + tok[i]) · 2^−0.5                   → [N, NL·P]; layer l reads columns [l·P, (l+1)·P)
 */
import { floats, MlxcelError, ops, type Embedding, type Linear, type RMSNorm } from '@mlxcel/tensor';
import type { GemmaForwardInput, GemmaLayout } from './batch.js';

export interface PleDims {
  numLayers: number;
  /** P = hidden_size_per_layer_input. */
  perLayer: number;
  hidden: number;
  vocabPerLayer: number;
}

/**
 * Aligns a precomputed token component to a call's rows (docs/architecture/gemma3n.md §13): rows [skip, skip + L) of
 * `values`, zero rows where `values` ends early (a right-padded prefill), the same array (no copy)
 * when it matches exactly, a zero-copy view when it is longer.
 */
export function alignPerLayerInputs(values: Float32Array, rows: number, width: number, skip: number, L: number): Float32Array {
  if (values.length !== rows * width)
    throw new MlxcelError('E_SHAPE', `perLayerInputs: ${values.length} values are not ${rows} rows of ${width}`);
  if (skip < 0) throw new MlxcelError('E_INPUT', `perLayerInputs: firstPosition is after this call's first token (by ${-skip})`);
  if (skip === 0 && rows === L) return values;
  if (skip + L <= rows) return values.subarray(skip * width, (skip + L) * width);
  const out = floats(L * width);
  if (skip < rows) out.set(values.subarray(skip * width, rows * width));
  return out;
}

export class PerLayerInputs {
  constructor(
    readonly dims: PleDims,
    readonly table: Embedding,
    readonly projection: Linear,
    readonly norm: RMSNorm,
  ) {}

  get width(): number {
    return this.dims.numLayers * this.dims.perLayer;
  }

  /** The token component of one sequence's ids (what a multimodal front-end may precompute). */
  tokenComponent(ids: Int32Array, overriddenRows?: Int32Array): Float32Array {
    const v = this.dims.vocabPerLayer;
    const pid = new Int32Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      pid[i] = id >= 0 && id < v ? id : 0;
    }
    if (overriddenRows) for (const r of overriddenRows) pid[r] = 0;
    const t = this.table.forward(pid);
    return ops.scale(t, Math.sqrt(this.dims.perLayer), 0, t);
  }

  /** ple [N, NL·P] for the batch; `e` [N, H] is the final (merged, scaled) embedding. */
  forward(e: Float32Array, batch: GemmaLayout): Float32Array {
    const { hidden, perLayer } = this.dims;
    const W = this.width;
    const tok = floats(batch.n * W);
    for (const s of batch.seqs) tok.set(this.tokenRows(s.input, batch.ids.subarray(s.start, s.start + s.len), s.p0), s.start * W);
    const proj = this.projection.forward(e, batch.n);
    ops.scale(proj, 1 / Math.sqrt(hidden), 0, proj);
    ops.rmsNorm(proj, perLayer, this.norm.weight, this.norm.eps, false, proj);
    ops.add(proj, tok, proj);
    return ops.scale(proj, Math.SQRT1_2, 0, proj);
  }

  private tokenRows(input: GemmaForwardInput, ids: Int32Array, p0: number): Float32Array {
    const pre = input.perLayerInputs;
    if (!pre) return this.tokenComponent(ids, input.embeddingOverrides?.rows);
    return alignPerLayerInputs(pre.values, pre.rows, this.width, p0 - (pre.firstPosition ?? p0), ids.length);
  }
}

/** Columns [l·P, (l+1)·P) of ple [N, NL·P] as a contiguous [N, P] array, for every layer. */
export function splitPerLayer(ple: Float32Array, N: number, numLayers: number, P: number): Float32Array[] {
  const W = numLayers * P;
  const out: Float32Array[] = [];
  for (let l = 0; l < numLayers; l++) {
    const a = floats(N * P);
    for (let r = 0; r < N; r++) a.set(ple.subarray(r * W + l * P, r * W + (l + 1) * P), r * P);
    out.push(a);
  }
  return out;
}

/**
 * A layer's per-layer-input injection term (HF `Gemma3nTextDecoderLayer.forward`, the
 * `per_layer_input_gate` / `per_layer_projection` block):
 * v = RMSNorm(W_proj (gelu_tanh(W_gate x) ⊙ ple_l)), [N, hidden]. Gemma 3n adds it to streams 1..K−1,
 * Gemma 4 to the residual.
 */
export function perLayerInjection(
  gate: Linear, projection: Linear, norm: RMSNorm, x: Float32Array, pleL: Float32Array, N: number, H: number,
): Float32Array {
  const g = gate.forward(x, N);
  ops.geluTanh(g, g);
  ops.mul(g, pleL, g);
  const v = projection.forward(g, N);
  return norm.forward(v, H, v);
}
