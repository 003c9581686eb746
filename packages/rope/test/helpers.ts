import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const CONFIG_DIR = fileURLToPath(new URL('../../../fixtures/configs/', import.meta.url));

/** A config copied into the repo's fixtures/configs/ (never read from outside the repo). */
export function loadConfig(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(`${CONFIG_DIR}${name}.json`, 'utf8')) as Record<string, unknown>;
}

/** Deterministic pseudo-random floats in [-1, 1). */
export function randomF32(n: number, seed: number): Float32Array {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

/** Relative/absolute closeness for float64 comparisons. */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, rel: number, abs = 0): void {
  if (actual.length !== expected.length) throw new Error(`length ${actual.length} ≠ ${expected.length}`);
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    const tol = Math.max(abs, rel * Math.abs(e));
    if (!(Math.abs(a - e) <= tol)) throw new Error(`index ${i}: ${a} vs expected ${e} (|Δ| ${Math.abs(a - e)} > ${tol})`);
  }
}

/** Bitwise equality of two Float32Arrays; returns the first differing index or -1. */
export function firstBitDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}
