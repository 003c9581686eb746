/**
 * Which keys a query may see in the conformer's chunked local attention, as an inclusive band of
 * distances dist = t - s (query frame t, key frame s): maxFuture >= s - t and t - s <= maxPast.
 *
 * The rule is a property of each model, not a constant (docs/architecture/audio.md §5): Gemma 3n keeps the original
 * inclusive construction (0 <= dist <= 12, 13 keys); Gemma 4 uses HF's corrected
 * sliding_window_mask_function((context_left - 1, context_right)), which admits 0 <= dist < 12 and
 * never dist == -context_right (12 keys). mlx-vlm's first Gemma 4 port reused the 3n construction.
 */
import { MlxcelError } from '@mlxcel/tensor';

export interface LocalWindow {
  /** Largest admitted t - s (>= 0 admits the query's own frame). */
  maxPast: number;
  /** Largest admitted s - t (0 = no look-ahead). */
  maxFuture: number;
}

/** Distance t - s is admitted by the window. */
export function admits(w: LocalWindow, dist: number): boolean {
  return dist <= w.maxPast && -dist <= w.maxFuture;
}

/**
 * The 3n-style window from `tril(ones(C, W)).T & tril(ones(W, C), P + F)`: -F <= dist <= P with
 * P = context_left - 1, F = context_right. Used by Gemma 3n, and by Gemma 4's old (wrong) ports.
 */
export function inclusiveWindow(contextLeft: number, contextRight: number): LocalWindow {
  const P = Math.max(0, contextLeft - 1);
  return { maxPast: P, maxFuture: contextRight };
}

/**
 * Gemma 4's corrected window, HF sliding_window_mask_function((P, F)) with P = context_left - 1 and
 * F = context_right: admits 0 <= dist < P or -F < dist < 0.
 */
export function gemma4Window(contextLeft: number, contextRight: number): LocalWindow {
  const P = contextLeft - 1, F = contextRight;
  const past = P - 1, future = F - 1; // inclusive bounds of the two half-open ranges
  if (past < 0 && future < 1)
    throw new MlxcelError('E_CONFIG', `attention_context_left ${contextLeft} / attention_context_right ${contextRight} admit no key at all`);
  // The union [0, past] u [-future, -1] is one band; an empty half collapses onto the other.
  return { maxPast: past >= 0 ? past : -1, maxFuture: future >= 1 ? future : 0 };
}
