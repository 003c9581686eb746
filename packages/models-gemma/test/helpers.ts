/** Shared test helpers: fixture loading, model loading, logits comparison, greedy decoding. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint, MemoryWeights, SafetensorsFile, type ForwardInput, type LanguageModel, type WeightStore } from '@mlxcel/tensor';
import { architectures } from '../src/index.js';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const FIXTURES = join(REPO, 'fixtures');

export function fixtureDir(name: string): string {
  return join(FIXTURES, name);
}

export function readConfig(dir: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
}

export function realConfig(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(FIXTURES, 'configs', `${name}.json`), 'utf8')) as Record<string, unknown>;
}

export interface Expected {
  inputIds: Int32Array;
  logits: Float32Array;
  greedyIds: Int32Array;
  greedyLogits: Float32Array;
}

export function readExpected(dir: string): Expected {
  const f = SafetensorsFile.open(join(dir, 'expected.safetensors'));
  return {
    inputIds: f.get('input_ids').toI32(),
    logits: f.get('logits').toF32(),
    greedyIds: f.get('greedy_ids').toI32(),
    greedyLogits: f.get('greedy_logits').toF32(),
  };
}

export function loadModel(config: Record<string, unknown>, weights: WeightStore): LanguageModel {
  const def = architectures.find((a) => a.modelTypes.includes(config.model_type as string));
  if (!def) throw new Error(`no architecture for ${String(config.model_type)}`);
  return def.load({ config, weights });
}

export function loadFixture(name: string): { model: LanguageModel; expected: Expected; config: Record<string, unknown>; store: Checkpoint } {
  const dir = fixtureDir(name);
  const config = readConfig(dir);
  const store = Checkpoint.open(dir);
  return { model: loadModel(config, store), expected: readExpected(dir), config, store };
}

/** A writable in-memory copy of a store (for pruning / converting tensors in tests). */
export function copyStore(store: WeightStore): MemoryWeights {
  const m = new MemoryWeights();
  for (const k of store.keys()) m.set(k, store.get(k));
  return m;
}

export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}

export function argmaxRow(x: Float32Array, V: number, row: number): number {
  let best = 0;
  for (let i = 1; i < V; i++) if (x[row * V + i]! > x[row * V + best]!) best = i;
  return best;
}

/** Prefill `ids`, then feed each argmax back one token at a time; returns the ids and each step's logits. */
export function greedy(model: LanguageModel, ids: Int32Array, steps: number): { ids: number[]; logits: Float32Array[] } {
  const state = model.newState();
  const V = model.vocabSize;
  let logits = model.forward([{ ids, state }], { logits: 'last' })[0]!;
  const out: number[] = [];
  const rows: Float32Array[] = [];
  for (let s = 0; s < steps; s++) {
    rows.push(logits);
    const next = argmaxRow(logits, V, 0);
    out.push(next);
    if (s + 1 < steps) logits = model.forward([{ ids: Int32Array.of(next), state }], { logits: 'last' })[0]!;
  }
  return { ids: out, logits: rows };
}

/** Runs `ids` through a fresh state in chunks of the given sizes, concatenating all logits. */
export function chunked(model: LanguageModel, ids: Int32Array, sizes: number[], extra: Partial<ForwardInput> = {}): Float32Array {
  const state = model.newState();
  const parts: Float32Array[] = [];
  let o = 0;
  for (const n of sizes) {
    parts.push(model.forward([{ ...extra, ids: ids.subarray(o, o + n), state }])[0]!);
    o += n;
  }
  if (o !== ids.length) throw new Error('chunk sizes do not cover the ids');
  const all = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
  let w = 0;
  for (const p of parts) {
    all.set(p, w);
    w += p.length;
  }
  return all;
}
