/**
 * A small seeded PRNG (sfc32 seeded through splitmix32) for random-weight models: fast enough to fill
 * real-size checkpoints (hundreds of millions of values) and identical on every platform.
 */
export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.u32();
  }

  /** Uniform 32-bit unsigned integer. */
  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [lo, hi) written into `out` (the sfc32 step inlined: this fills GBs of weights). */
  fillUniform(out: Float32Array, lo: number, hi: number): void {
    const w = (hi - lo) / 4294967296;
    let a = this.a, b = this.b, c = this.c, d = this.d;
    for (let i = 0; i < out.length; i++) {
      const t = (((a + b) | 0) + d) | 0;
      d = (d + 1) | 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) | 0;
      c = ((c << 21) | (c >>> 11)) + t | 0;
      out[i] = lo + (t >>> 0) * w;
    }
    this.a = a; this.b = b; this.c = c; this.d = d;
  }

  fillU32(out: Uint32Array): void {
    let a = this.a, b = this.b, c = this.c, d = this.d;
    for (let i = 0; i < out.length; i++) {
      const t = (((a + b) | 0) + d) | 0;
      d = (d + 1) | 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) | 0;
      c = ((c << 21) | (c >>> 11)) + t | 0;
      out[i] = t >>> 0;
    }
    this.a = a; this.b = b; this.c = c; this.d = d;
  }
}

/** A stable 32-bit seed per tensor name, so one tensor's values do not depend on generation order. */
export function seedFor(seed: number, name: string): number {
  let h = (seed ^ 0x811c9dc5) >>> 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
