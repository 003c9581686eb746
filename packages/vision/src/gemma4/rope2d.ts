/**
 * Gemma 4's 2-D RoPE (HF apply_multidimensional_rope): head_dim splits into two halves of s channels,
 * the first rotated by the patch column x, the second by the row y, each an ordinary rotate-half RoPE
 * over its s channels (pairs (j, j + s/2), angle pos·θ^(−2j/s)). Run as one native rope call by viewing
 * [L, heads, hd] as [L·heads·2, 1, s] with a per-half position list.
 */
import * as native from '@mlxcel/core-native';

export interface Rope2dTables {
  cos: Float32Array;
  sin: Float32Array;
  rows: number;
}

/**
 * cos/sin [rows, s/2] in float32 as HF computes them (inv_freq = 1/θ^(2j/s) in f32, pos·inv_freq in
 * f32). Row r holds position r − 1: HF rotates padding patches by their position −1, and although
 * their outputs are discarded after pooling they are part of the encoder output a trace shows.
 */
export function rope2dTables(headDim: number, theta: number, rows: number): Rope2dTables {
  const s = headDim / 2, half = s / 2;
  const inv = new Float32Array(half);
  for (let j = 0; j < half; j++) inv[j] = Math.fround(1 / Math.fround(theta ** Math.fround((2 * j) / s)));
  const cos = new Float32Array(rows * half), sin = new Float32Array(rows * half);
  for (let p = 0; p < rows; p++)
    for (let j = 0; j < half; j++) {
      const a = Math.fround((p - 1) * inv[j]!);
      cos[p * half + j] = Math.cos(a);
      sin[p * half + j] = Math.sin(a);
    }
  return { cos, sin, rows };
}

/** Per (token, head, half) table rows (position + 1) for x [L, heads, hd]; padding tokens sit at −1. */
export function rope2dPositions(positions: Int32Array, L: number, heads: number): Int32Array {
  const out = new Int32Array(L * heads * 2);
  for (let i = 0; i < L; i++) {
    const x = positions[2 * i]! + 1, y = positions[2 * i + 1]! + 1;
    for (let h = 0; h < heads; h++) {
      out[(i * heads + h) * 2] = x;
      out[(i * heads + h) * 2 + 1] = y;
    }
  }
  return out;
}

/** In place on x [L, heads, hd]. */
export function applyRope2d(x: Float32Array, L: number, heads: number, headDim: number, pos: Int32Array, t: Rope2dTables): void {
  const s = headDim / 2;
  native.rope(x, L * heads * 2, 1, s, pos, t.cos, t.sin, s, false);
}
