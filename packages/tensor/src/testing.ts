/**
 * Helpers the packages' tests share: reading a reference fixture (`<dir>/expected.safetensors`), the
 * two distances its tolerances are stated in, and the error a call throws.
 */
import { join } from 'node:path';
import { SafetensorsFile } from './safetensors.js';

/** The tensors of one fixture's expected.safetensors, read by name. */
export interface ExpectedTensors {
  /** The fixture folder. */
  dir: string;
  f32(name: string): Float32Array;
  i32(name: string): Int32Array;
  shape(name: string): readonly number[];
}

export function openExpected(dir: string): ExpectedTensors {
  const file = SafetensorsFile.open(join(dir, 'expected.safetensors'));
  return { dir, f32: (n) => file.get(n).toF32(), i32: (n) => file.get(n).toI32(), shape: (n) => file.get(n).shape };
}

/** max |a − b| over two arrays of equal length. */
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

/** The error `fn` throws (with its `code` when it is an MlxcelError); throws itself when `fn` does not. */
export function errorOf(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('did not throw');
}
