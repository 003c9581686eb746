/**
 * Reading a reference fixture (`<dir>/expected.safetensors`) and the two distances its tolerances are
 * stated in. For tests: the audio and vision fixture tests (and any other) compare against these.
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
