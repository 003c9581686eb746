/** Column splitting of row-major activations (fused projections → separate q/k/v, gate/up). */
import { floats } from '@mlxcel/tensor';

/**
 * Splits [M, Σ widths] into one [M, width] matrix per width (column blocks in order), into `into[i]`
 * (M · widths[i] floats each) when given.
 */
export function splitColumns(x: Float32Array, M: number, widths: readonly number[], into?: readonly Float32Array[]): Float32Array[] {
  const total = widths.reduce((a, b) => a + b, 0);
  const outs = into ? [...into] : widths.map((w) => floats(M * w));
  for (let r = 0; r < M; r++) {
    let c = r * total;
    for (let i = 0; i < widths.length; i++) {
      const w = widths[i]!;
      outs[i]!.set(x.subarray(c, c + w), r * w);
      c += w;
    }
  }
  return outs;
}
