/**
 * THE seeded PRNG of mlxcel: xoshiro128** (Blackman & Vigna, https://prng.di.unimi.it/xoshiro128starstar.c),
 * a small, fast 32-bit generator with a 128-bit state and period 2^128 − 1. Seeded through splitmix32
 * so that any integer seed (including 0) gives a well-mixed, non-zero state. Not cryptographic.
 * The engine's sampler draws from it, and random-weight checkpoints fill tensors from it (one stream
 * per tensor, seeded by `seedFor(seed, name)`, so a tensor's values do not depend on load order).
 */
export class Xoshiro128 {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  constructor(seed: number) {
    this.reseed(seed);
  }

  /** A generator with an explicit (non-zero) 128-bit state, e.g. to check reference vectors. */
  static fromState(s0: number, s1: number, s2: number, s3: number): Xoshiro128 {
    if (((s0 | s1 | s2 | s3) >>> 0) === 0) throw new RangeError('xoshiro128** state must not be all zero');
    const g = new Xoshiro128(0);
    g.s0 = s0 | 0;
    g.s1 = s1 | 0;
    g.s2 = s2 | 0;
    g.s3 = s3 | 0;
    return g;
  }

  /**
   * Reset the state from a seed. Integers up to 2^53 are used in full (low and high
   * 32-bit halves are both mixed in); fractional parts are ignored.
   */
  reseed(seed: number): void {
    if (!Number.isFinite(seed)) throw new RangeError(`seed must be a finite number, got ${seed}`);
    const s = Math.trunc(Math.abs(seed));
    let x = (s >>> 0) ^ Math.imul(Math.floor(s / 4294967296) >>> 0, 0x9e3779b9) ^ (seed < 0 ? 0x5bd1e995 : 0);
    const next = (): number => {
      // splitmix32
      x = (x + 0x9e3779b9) | 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** The next uniformly distributed unsigned 32-bit integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }


  /** Fill `out` with nextUint32() values (the same stream as out.length single calls). */
  fillUint32(out: Uint32Array): void {
    let s0 = this.s0, s1 = this.s1, s2 = this.s2, s3 = this.s3;
    for (let i = 0; i < out.length; i++) {
      const m = Math.imul(s1, 5);
      out[i] = Math.imul((m << 7) | (m >>> 25), 9) >>> 0;
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
    }
    this.s0 = s0; this.s1 = s1; this.s2 = s2; this.s3 = s3;
  }

  /** Fill `out` with values uniform in [lo, hi): lo + nextUint32() · (hi − lo) / 2^32. */
  fillUniform(out: Float32Array, lo: number, hi: number): void {
    // The words are drawn into out's own bytes, then each is replaced by its float in place.
    const words = new Uint32Array(out.buffer, out.byteOffset, out.length);
    this.fillUint32(words);
    const w = (hi - lo) / 4294967296;
    for (let i = 0; i < out.length; i++) out[i] = lo + words[i]! * w;
  }

  /**
   * Fill `out[0..n)` with `nextOpenUnit()` values (the same stream as n single calls), with the state
   * kept in locals and the widening fused into the loop: the sampler's hot path (twice as fast as
   * fillUint32 followed by a widening pass).
   */
  fillOpenUnit(out: Float64Array, n: number): void {
    let s0 = this.s0, s1 = this.s1, s2 = this.s2, s3 = this.s3;
    for (let i = 0; i < n; i++) {
      const m = Math.imul(s1, 5);
      const result = Math.imul((m << 7) | (m >>> 25), 9) >>> 0;
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
      out[i] = (result + 0.5) / 4294967296;
    }
    this.s0 = s0; this.s1 = s1; this.s2 = s2; this.s3 = s3;
  }

  /** A uniform double in the open interval (0, 1): (k + 0.5) / 2^32, never 0 or 1. */
  nextOpenUnit(): number {
    return (this.nextUint32() + 0.5) / 4294967296;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** A stable 32-bit seed per name (FNV-1a over the name, started from the seed). */
export function seedFor(seed: number, name: string): number {
  let h = (seed ^ 0x811c9dc5) >>> 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
