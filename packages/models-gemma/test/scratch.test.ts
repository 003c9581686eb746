import { it } from 'vitest';
import { loadFixture, maxAbsDiff, greedy } from './helpers.js';
it.each(['gemma3n-tiny', 'gemma3n-tiny-q4'])('%s', (name) => {
  const { model, expected } = loadFixture(name);
  const st = model.newState();
  const lg = model.forward([{ ids: expected.inputIds, state: st }])[0]!;
  console.log(name, 'maxdiff', maxAbsDiff(lg, expected.logits));
  const V = model.vocabSize;
  for (let r = 0; r < 24; r += 4) console.log(r, maxAbsDiff(lg.subarray(r * V, (r + 1) * V), expected.logits.subarray(r * V, (r + 1) * V)));
  const g = greedy(model, expected.inputIds, 8);
  console.log(g.ids.join(','), Array.from(expected.greedyIds).join(','));
});
