// Weight placement changes where the streamed weights live, never a result: the quantized fixtures
// loaded from their files (mapped in place, or copied into resident huge-page memory) and a random
// real-shape model give bit-identical logits for a prompt and a few decoded tokens (in the row layout).
// The tile layout (weightLayout 'auto', resident only, where the kernels read it) holds the same
// weights but sums in another order: logits within rounding of the row layout's, the same greedy ids.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as native from '@mlxcel/core-native';
import { ops, setWeightLayout, setWeightPlacement, weightArena, weightLayout, weightPlacement, type LanguageModel } from '@mlxcel/tensor';
import { loadModelFromDir } from '../src/load.js';
import { randomModel } from '../src/random.js';
import { readJson } from '../src/load.js';
import { FIXTURES } from './helpers/paths.js';

const initial = weightPlacement(), initialLayout = weightLayout();
afterAll(() => {
  setWeightPlacement(initial);
  setWeightLayout(initialLayout);
});

/** Logits of a 12-token prompt and 3 greedy steps. */
function run(model: LanguageModel): Float32Array[] {
  const state = model.newState();
  const ids = Int32Array.from({ length: 12 }, (_, i) => (i * 37 + 5) % model.vocabSize);
  const out = [model.forward([{ ids, state }], { logits: 'all' })[0]!];
  for (let s = 0; s < 3; s++) {
    const last = out[out.length - 1]!;
    const tok = ops.argmax(last.subarray(last.length - model.vocabSize), model.vocabSize)[0]!;
    out.push(model.forward([{ ids: Int32Array.of(tok), state }], { logits: 'last' })[0]!);
  }
  return out;
}

/** Logits within rounding of the reference (relative to the largest logit) and the same greedy ids. */
function expectClose(got: Float32Array[], ref: Float32Array[], vocab: number, label: string): void {
  expect(got.length).toBe(ref.length);
  got.forEach((g, i) => {
    const r = ref[i]!;
    let maxd = 0, maxr = 0;
    for (let j = 0; j < r.length; j++) {
      maxd = Math.max(maxd, Math.abs(g[j]! - r[j]!));
      maxr = Math.max(maxr, Math.abs(r[j]!));
    }
    expect(maxd, `${label} step ${i}`).toBeLessThanOrEqual(1e-4 * maxr);
    expect(ops.argmax(g.subarray(g.length - vocab), vocab)[0], `${label} step ${i} greedy id`).toBe(ops.argmax(r.subarray(r.length - vocab), vocab)[0]);
  });
}

describe('weight placement', () => {
  setWeightLayout('rows');
  for (const name of ['phimoe-tiny-q4-mlx', 'gemma3n-tiny-q4'])
    it(`${name}: resident == mapped, bit for bit`, () => {
      setWeightPlacement('mapped');
      const mapped = run(loadModelFromDir(join(FIXTURES, name), { tokenizer: 'none' }).model);
      setWeightPlacement('resident');
      const resident = run(loadModelFromDir(join(FIXTURES, name), { tokenizer: 'none' }).model);
      expect(resident.length).toBe(mapped.length);
      resident.forEach((r, i) => expect(Buffer.from(r.buffer, r.byteOffset, r.byteLength).equals(Buffer.from(mapped[i]!.buffer, mapped[i]!.byteOffset, mapped[i]!.byteLength))).toBe(true));
    });

  it('random Phi-3.5-mini shapes (2 layers, q4): resident == mapped, bit for bit', () => {
    const config = readJson(join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), 'config');
    setWeightPlacement('mapped');
    const mapped = run(randomModel(config, { layers: 2, quantize: { bits: 4, groupSize: 64 } }));
    setWeightPlacement('resident');
    const resident = run(randomModel(config, { layers: 2, quantize: { bits: 4, groupSize: 64 } }));
    resident.forEach((r, i) => expect(Buffer.from(r.buffer, r.byteOffset, r.byteLength).equals(Buffer.from(mapped[i]!.buffer, mapped[i]!.byteOffset, mapped[i]!.byteLength))).toBe(true));
  });
});

describe.runIf(native.weightTileLayout())('weight layout', () => {
  for (const name of ['phimoe-tiny-q4-mlx', 'gemma3n-tiny-q4'])
    it(`${name}: tiles (resident, auto) within rounding of rows, same greedy ids`, () => {
      setWeightPlacement('resident');
      setWeightLayout('rows');
      const rows = loadModelFromDir(join(FIXTURES, name), { tokenizer: 'none' }).model;
      const ref = run(rows);
      setWeightLayout('auto');
      const before = weightArena.tiledBytes;
      const tiled = loadModelFromDir(join(FIXTURES, name), { tokenizer: 'none' }).model;
      expect(weightArena.tiledBytes).toBeGreaterThan(before); // the tile layout really loaded
      expectClose(run(tiled), ref, rows.vocabSize, name);
    });

  it('random Phi-3.5-mini shapes (2 layers, q4): tiles within rounding of rows; mapped stays in rows', () => {
    const config = readJson(join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), 'config');
    setWeightPlacement('resident');
    setWeightLayout('rows');
    const rows = run(randomModel(config, { layers: 2, quantize: { bits: 4, groupSize: 64 } }));
    setWeightLayout('auto');
    const before = weightArena.tiledBytes;
    const m = randomModel(config, { layers: 2, quantize: { bits: 4, groupSize: 64 } });
    expect(weightArena.tiledBytes).toBeGreaterThan(before);
    expectClose(run(m), rows, m.vocabSize, 'phi35');
    setWeightPlacement('mapped');
    const mid = weightArena.tiledBytes;
    randomModel(config, { layers: 1, quantize: { bits: 4, groupSize: 64 } });
    expect(weightArena.tiledBytes).toBe(mid);
  });

  it('rejects an unknown layout, naming it', () => {
    expect(() => setWeightLayout('tiles' as 'auto')).toThrow(/weight layout must be "auto" or "rows", got "tiles"/);
  });
});
