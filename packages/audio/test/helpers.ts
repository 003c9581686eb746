import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SafetensorsFile } from '@mlxcel/tensor';

const here = dirname(fileURLToPath(import.meta.url));
/** Fixtures are copied into the repo (DESIGN.md: tests read nothing outside the repository). */
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
  return {
    dir,
    f32: (n) => file.get(n).toF32(),
    i32: (n) => file.get(n).toI32(),
    shape: (n) => file.get(n).shape,
  };
}

/** max |a - b| (arrays of equal length). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** max |a - b| / max |b|: the fixtures' tolerance for encoder outputs. */
export function relMaxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let scale = 0;
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]!));
  return maxAbsDiff(a, b) / scale;
}
