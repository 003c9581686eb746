/**
 * The size figures every model reports (`LanguageModel.stats`): parameters (logical elements, quantized
 * or not) and the bytes of weights read per generated token, which bounds decode speed on a memory-bound
 * CPU (`mlxcel bench`, `mlxcel inspect`). One rule for every family:
 *   - a matrix read in full every token counts its stored bytes (`streamed`);
 *   - an embedding table counts one row per token (`partial(w, 1 / rows)`), a tied head the rest of it;
 *   - a sparse expert set counts k of its E experts (`experts`);
 *   - f32 vectors (norm weights, biases, scales) count 4 bytes per element (`vector`).
 */
import type { Weight } from '@mlxcel/tensor';

/** Logical element count of a (possibly stacked or quantized) weight. */
export function paramCount(w: Weight): number {
  return w.shape.reduce((a, b) => a * b, 1);
}

export class WeightStats {
  parameters = 0;
  weightBytes = 0;

  /** A weight read in full every token. */
  streamed(w: Weight): void {
    this.parameters += paramCount(w);
    this.weightBytes += w.nbytes;
  }

  /** A weight of which only `fraction` is read per token (an embedding table: one row). */
  partial(w: Weight, fraction: number): void {
    this.parameters += paramCount(w);
    this.weightBytes += w.nbytes * fraction;
  }

  /** A tied head: the embedding table counted by `partial` is read in full after all (its other rows). */
  tiedHead(table: Weight): void {
    this.weightBytes += table.nbytes * (1 - 1 / table.rows);
  }

  /** A sparse expert set of `parameters` elements stored in `nbytes`, of which k of E experts run per token. */
  experts(parameters: number, nbytes: number, k: number, E: number): void {
    this.parameters += parameters;
    this.weightBytes += (nbytes * k) / E;
  }

  /** n f32 elements read every token (norm weights, biases, scales). */
  vector(n: number): void {
    this.parameters += n;
    this.weightBytes += 4 * n;
  }

  get value(): { parameters: number; weightBytes: number } {
    return { parameters: this.parameters, weightBytes: Math.round(this.weightBytes) };
  }
}
