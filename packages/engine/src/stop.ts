/**
 * Stop-string matching over streamed text. Text that could still be the start of a stop string is
 * held back, so the caller never emits characters that a later token turns into a stop.
 */
export class StopMatcher {
  private pending = '';
  constructor(private readonly stops: readonly string[]) {}

  /** Adds text; returns what is safe to emit now and whether a stop string was hit (text before it). */
  push(text: string): { emit: string; stopped: boolean } {
    this.pending += text;
    let cut = -1;
    for (const s of this.stops) {
      if (!s) continue;
      const i = this.pending.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      const emit = this.pending.slice(0, cut);
      this.pending = '';
      return { emit, stopped: true };
    }
    // Hold back the longest suffix that is a proper prefix of some stop string.
    let hold = 0;
    for (const s of this.stops)
      for (let k = Math.min(s.length - 1, this.pending.length); k > hold; k--)
        if (this.pending.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
    const emit = this.pending.slice(0, this.pending.length - hold);
    this.pending = this.pending.slice(this.pending.length - hold);
    return { emit, stopped: false };
  }

  /** Whatever is still held back (at the end of generation). */
  flush(): string {
    const p = this.pending;
    this.pending = '';
    return p;
  }
}
