/**
 * Logits processors of docs/architecture/formats.md (e) step 1b–1d, applied in place to the logits `z`.
 * The history is the caller's token list (this engine: prompt + generated tokens, as HF);
 * each penalty looks at the last `window` tokens of it, or all of it when `window` is
 * undefined. Ids outside [0, z.length) are ignored.
 */

/** Reusable scratch for counting tokens without allocating vocab-sized arrays per step. */
export class PenaltyScratch {
  private counts = new Uint32Array(0);
  private touched = new Int32Array(64);
  private nTouched = 0;

  /** Count the ids of `history[start..]`; returns the number of distinct ids (see `distinct`). */
  count(history: ArrayLike<number>, start: number, vocab: number): number {
    if (this.counts.length < vocab) this.counts = new Uint32Array(vocab);
    const counts = this.counts;
    this.nTouched = 0;
    for (let i = start; i < history.length; i++) {
      const t = history[i]!;
      if (!(t >= 0 && t < vocab) || !Number.isInteger(t)) continue;
      if (counts[t] === 0) {
        if (this.nTouched === this.touched.length) {
          const grown = new Int32Array(this.touched.length * 2);
          grown.set(this.touched);
          this.touched = grown;
        }
        this.touched[this.nTouched++] = t;
      }
      counts[t]!++;
    }
    return this.nTouched;
  }

  /** The i-th distinct id of the last `count` call. */
  distinct(i: number): number {
    return this.touched[i]!;
  }

  /** How often `id` occurred in the last `count` call. */
  occurrences(id: number): number {
    return this.counts[id]!;
  }

  /** Zero the counts of the last `count` call (touching only the ids that were set). */
  clear(): void {
    for (let i = 0; i < this.nTouched; i++) this.counts[this.touched[i]!] = 0;
    this.nTouched = 0;
  }
}

function windowStart(length: number, window: number | undefined): number {
  return window === undefined ? 0 : Math.max(0, length - window);
}

/** 1b. Repetition penalty ρ: z ← z·ρ if z < 0 else z/ρ, once per distinct token in the window. */
export function applyRepetitionPenalty(
  z: Float32Array,
  history: ArrayLike<number>,
  penalty: number,
  window: number | undefined,
  scratch: PenaltyScratch,
): void {
  const n = scratch.count(history, windowStart(history.length, window), z.length);
  for (let i = 0; i < n; i++) {
    const t = scratch.distinct(i);
    const v = z[t]!;
    z[t] = v < 0 ? v * penalty : v / penalty;
  }
  scratch.clear();
}

/** 1c. Presence penalty π: z −= π once per distinct token in the window. */
export function applyPresencePenalty(
  z: Float32Array,
  history: ArrayLike<number>,
  penalty: number,
  window: number | undefined,
  scratch: PenaltyScratch,
): void {
  const n = scratch.count(history, windowStart(history.length, window), z.length);
  for (let i = 0; i < n; i++) z[scratch.distinct(i)]! -= penalty;
  scratch.clear();
}

/** 1d. Frequency penalty φ: z −= φ·count(t in window). */
export function applyFrequencyPenalty(
  z: Float32Array,
  history: ArrayLike<number>,
  penalty: number,
  window: number | undefined,
  scratch: PenaltyScratch,
): void {
  const n = scratch.count(history, windowStart(history.length, window), z.length);
  for (let i = 0; i < n; i++) {
    const t = scratch.distinct(i);
    z[t]! -= penalty * scratch.occurrences(t);
  }
  scratch.clear();
}
