import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SafetensorsFile } from '@mlxcel/tensor';

const here = dirname(fileURLToPath(import.meta.url));
/** Fixtures are copied into the repository (tests read nothing outside it). */
export const FIXTURES = resolve(here, '../../../fixtures');

export interface Expected {
  dir: string;
  f32(name: string): Float32Array;
  i32(name: string): Int32Array;
  shape(name: string): readonly number[];
}

export function expected(name: string): Expected {
  const dir = join(FIXTURES, name);
  const file = SafetensorsFile.open(join(dir, 'expected.safetensors'));
  return { dir, f32: (n) => file.get(n).toF32(), i32: (n) => file.get(n).toI32(), shape: (n) => file.get(n).shape };
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** max |a − b| / max |b| (the fixtures' tolerance for tower activations). */
export function relMaxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < b.length; i++) s = Math.max(s, Math.abs(b[i]!));
  return maxAbsDiff(a, b) / s;
}

/** Channels-last [h, w, c] -> NCHW [c, h, w] (the fixtures' layout). */
export function toChw(x: Float32Array, h: number, w: number, c: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < h * w; i++) for (let k = 0; k < c; k++) out[k * h * w + i] = x[i * c + k]!;
  return out;
}
