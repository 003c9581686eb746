// Weight placement changes where the streamed weights live, never a result: the quantized fixtures
// loaded from their files (mapped in place, or copied into resident huge-page memory) and a random
// real-shape model give bit-identical logits for a prompt and a few decoded tokens.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ops, setWeightPlacement, weightPlacement, type LanguageModel } from '@mlxcel/tensor';
import { loadModelFromDir } from '../src/load.js';
import { randomModel } from '../src/random.js';
import { readJson } from '../src/load.js';
import { FIXTURES } from './helpers/paths.js';

const initial = weightPlacement();
afterAll(() => setWeightPlacement(initial));

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

describe('weight placement', () => {
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
