import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint, SafetensorsFile, type LanguageModel, type SequenceState, type WeightStore } from '@mlxcel/tensor';
import { architectures } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
/** Fixtures are copied into the repo (docs/architecture/README.md, "Conventions": tests read nothing outside the repository). */
export const FIXTURES = resolve(here, '../../../fixtures');

export function readConfig(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
}

export function realConfig(name: string): Record<string, unknown> {
  return readConfig(join(FIXTURES, 'configs', name));
}

export interface Fixture {
  dir: string;
  config: Record<string, unknown>;
  weights: WeightStore;
  expected: SafetensorsFile;
  i32(name: string): Int32Array;
  f32(name: string): Float32Array;
}

export function fixture(name: string): Fixture {
  const dir = join(FIXTURES, name);
  const expected = SafetensorsFile.open(join(dir, 'expected.safetensors'));
  return {
    dir,
    config: readConfig(join(dir, 'config.json')),
    weights: Checkpoint.open(dir),
    expected,
    i32: (n) => expected.get(n).toI32(),
    f32: (n) => expected.get(n).toF32(),
  };
}

export function archFor(config: Record<string, unknown>) {
  const a = architectures.find((d) => d.modelTypes.includes(config.model_type as string));
  if (!a) throw new Error(`no architecture for ${String(config.model_type)}`);
  return a;
}

export function loadModel(config: Record<string, unknown>, weights: WeightStore): LanguageModel {
  return archFor(config).load({ config, weights });
}

export function loadFixtureModel(name: string): { model: LanguageModel; fx: Fixture } {
  const fx = fixture(name);
  return { model: loadModel(fx.config, fx.weights), fx };
}

export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}

/** Argmax of a row with some ids excluded (the sampler's suppression, applied before argmax). */
export function argmax(row: Float32Array, exclude: Int32Array = new Int32Array(0)): number {
  const ex = new Set(exclude);
  let best = -1, bv = -Infinity;
  for (let i = 0; i < row.length; i++) if (!ex.has(i) && row[i]! > bv) { bv = row[i]!; best = i; }
  return best;
}

/** Greedy decode: prefill the prompt, then feed each argmax back one token at a time. */
export function greedy(
  model: LanguageModel, prompt: Int32Array, steps: number, opts: { suppress?: boolean; state?: SequenceState } = {},
): { ids: Int32Array; logits: Float32Array } {
  const state = opts.state ?? model.newState();
  const sup = opts.suppress ? model.suppressedTokenIds() : new Int32Array(0);
  const V = model.vocabSize;
  const ids = new Int32Array(steps);
  const logits = new Float32Array(steps * V);
  let row = model.forward([{ ids: prompt, state }], { logits: 'last' })[0]!;
  for (let s = 0; s < steps; s++) {
    logits.set(row, s * V);
    ids[s] = argmax(row, sup);
    if (s + 1 < steps) row = model.forward([{ ids: ids.subarray(s, s + 1), state }], { logits: 'last' })[0]!;
  }
  return { ids, logits };
}

/** Full-prompt logits [T, V] from an empty state. */
export function fullLogits(model: LanguageModel, ids: Int32Array): Float32Array {
  return model.forward([{ ids, state: model.newState() }])[0]!;
}

/**
 * Logits of a prompt fed in chunks of `chunk` tokens, concatenated. `expectLength`: told to the state
 * first (as the engine's prefill does), so LongRoPE uses the final table from the first chunk.
 */
export function chunkedLogits(model: LanguageModel, ids: Int32Array, chunk: number, opts: { expectLength?: number } = {}): Float32Array {
  const state = model.newState();
  if (opts.expectLength !== undefined) state.expectLength!(opts.expectLength);
  const V = model.vocabSize;
  const out = new Float32Array(ids.length * V);
  for (let s = 0; s < ids.length; s += chunk) {
    const part = ids.subarray(s, Math.min(ids.length, s + chunk));
    out.set(model.forward([{ ids: part, state }])[0]!, s * V);
  }
  return out;
}
