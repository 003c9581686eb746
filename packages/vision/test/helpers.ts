import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { maxAbsDiff, openExpected, relMaxDiff, type ExpectedTensors } from '@mlxcel/tensor';

export { maxAbsDiff, relMaxDiff };
export type Expected = ExpectedTensors;

const here = dirname(fileURLToPath(import.meta.url));
/** Fixtures are copied into the repository (tests read nothing outside it). */
export const FIXTURES = resolve(here, '../../../fixtures');

/** The expected tensors of fixture `name` (fixtures/<name>/expected.safetensors). */
export function expected(name: string): Expected {
  return openExpected(join(FIXTURES, name));
}

/** Channels-last [h, w, c] -> NCHW [c, h, w] (the fixtures' layout). */
export function toChw(x: Float32Array, h: number, w: number, c: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < h * w; i++) for (let k = 0; k < c; k++) out[k * h * w + i] = x[i * c + k]!;
  return out;
}

