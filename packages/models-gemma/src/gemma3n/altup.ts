/**
 * AltUp (docs/architecture/gemma3n.md §6, §7.1): K parallel copies ("streams") of the residual; one active stream goes
 * through the layer, the others are predicted from all streams and corrected by the layer's innovation.
 * Streams are K arrays [N, H]. Coefficient matrices are tiny (K² × K, K × K) and run in JS; the stream
 * mixes run natively, one pass per predict / correct over every token.
 */
import { floats, ops, type Linear, type RMSNorm } from '@mlxcel/tensor';

/** rms(v) per row, and the HF floor sqrt(max(mean(v²), 1e-5)) used for the projected streams (§6). */
function rowRms(x: Float32Array, H: number, floor: number): Float64Array {
  const rows = x.length / H;
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let i = r * H; i < (r + 1) * H; i++) s += x[i]! * x[i]!;
    out[r] = Math.sqrt(Math.max(s / H, floor));
  }
  return out;
}

/** x_k = u · target / safe(u) per row (magnitude matching of §6). */
function matchMagnitude(u: Float32Array, H: number, target: Float64Array): Float32Array {
  const cur = rowRms(u, H, 1e-5);
  for (let r = 0; r < target.length; r++) {
    const f = target[r]! / cur[r]!;
    for (let i = r * H; i < (r + 1) * H; i++) u[i] = u[i]! * f;
  }
  return u;
}

/** Expand: stream 0 = e, stream k = A_{k−1} e rescaled to e's RMS. */
export function altupExpand(e: Float32Array, N: number, H: number, projections: readonly Linear[]): Float32Array[] {
  const target = rowRms(e, H, 0);
  return [e, ...projections.map((p) => matchMagnitude(p.forward(e, N), H, target))];
}

/** Collapse: stream k ≥ 1 = U_{k−1} X_k rescaled to X_0's RMS; then the plain mean of the K streams. */
export function altupCollapse(X: readonly Float32Array[], N: number, H: number, unembed: readonly Linear[]): Float32Array {
  const target = rowRms(X[0]!, H, 0);
  const sum = X[0]!.slice();
  unembed.forEach((p, k) => ops.add(sum, matchMagnitude(p.forward(X[k + 1]!, N), H, target), sum));
  return ops.scale(sum, 1 / X.length, 0, sum);
}

export class AltUp {
  constructor(
    readonly K: number,
    readonly H: number,
    readonly routerNorm: RMSNorm,
    readonly router: Linear,
    /** prediction_coefs [K², K], clamped to ±altup_coef_clip at load. */
    readonly predictionCoefs: Float32Array,
    /** correction_coefs [K, K], clamped at load. */
    readonly correctionCoefs: Float32Array,
    readonly correctOutputScale: Float32Array | null,
  ) {}

  /** tanh( (RMSNorm(x) · (1/H)) · W_rᵀ ) → [N, K]; the factor is 1/H, not 1/sqrt(H) (§7.1). */
  private modalities(x: Float32Array, N: number): Float32Array {
    const xn = this.routerNorm.forward(x, this.H);
    ops.scale(xn, 1 / this.H, 0, xn);
    const r = this.router.forward(xn, N);
    return ops.tanh(r, r);
  }

  /** coefs [N, rowsOut] = r [N, K] · Wᵀ with W [rowsOut, K], in f64. */
  private coefs(r: Float32Array, N: number, W: Float32Array, rowsOut: number): Float64Array {
    const K = this.K;
    const out = new Float64Array(N * rowsOut);
    for (let t = 0; t < N; t++)
      for (let o = 0; o < rowsOut; o++) {
        let s = 0;
        for (let j = 0; j < K; j++) s += r[t * K + j]! * W[o * K + j]!;
        out[t * rowsOut + o] = s;
      }
    return out;
  }

  /**
   * pred_i = X_i + Σ_j M[i][j] X_j with M[i][j] = m[i·K + j], m = W_p · mod(X_active) (§7.1): one native
   * pass over all tokens and streams, with per-token coefficients δ_ij + M[i][j] ([N, K, K]).
   */
  predict(X: readonly Float32Array[], N: number): Float32Array[] {
    const K = this.K, H = this.H;
    const m = this.coefs(this.modalities(X[0]!, N), N, this.predictionCoefs, K * K);
    const c = new Float32Array(N * K * K); // [N, K out, K in]
    for (let t = 0; t < N; t++)
      for (let i = 0; i < K; i++)
        for (let j = 0; j < K; j++) c[(t * K + i) * K + j] = m[t * K * K + i * K + j]! + (i === j ? 1 : 0);
    const pred = X.map((x) => floats(x.length));
    ops.mixStreams(X, c, pred, N, H);
    return pred;
  }

  /**
   * corr_i = pred_i + (W_c · mod(y) + 1)_i · (y − pred_active) (§7.1), written over `pred`: the
   * innovation, then one native pass over all tokens and streams (inputs pred_0..pred_{K−1} and the innovation, [N, K, K + 1]
   * coefficients: 1 for pred_i, the gain for the innovation, 0 = no term for the rest).
   */
  correct(pred: Float32Array[], y: Float32Array, N: number): Float32Array[] {
    const K = this.K, H = this.H, J = K + 1;
    const g = this.coefs(this.modalities(y, N), N, this.correctionCoefs, K);
    const innov = ops.sub(y, pred[0]!);
    const c = new Float32Array(N * K * J); // [N, K out, K + 1 in]
    for (let t = 0; t < N; t++)
      for (let i = 0; i < K; i++) {
        c[(t * K + i) * J + i] = 1;
        c[(t * K + i) * J + K] = g[t * K + i]! + 1;
      }
    // In place over the predictions (the kernel reads every input of an element before writing it):
    // they are this layer's own arrays and dead after the correction.
    ops.mixStreams([...pred, innov], c, pred, N, H);
    return pred;
  }

  /** The active corrected stream, scaled by correct_output_scale when altup_correct_scale (§7.4). */
  scaledActive(corr: readonly Float32Array[]): Float32Array {
    return this.correctOutputScale ? ops.mul(corr[0]!, this.correctOutputScale) : corr[0]!.slice();
  }
}
