/**
 * Parity with the reference fixtures (fixtures/README.md): one full forward over the prompt matches
 * `logits` within 1e-3, and greedy decoding (prefill, then one token at a time) reproduces
 * `greedy_ids` exactly and `greedy_logits` within 1e-3.
 */
import { describe, expect, it } from 'vitest';
import { greedy, loadFixture, maxAbsDiff } from './helpers.js';

const CASES = ['gemma3n-tiny', 'gemma3n-tiny-q4', 'gemma4-tiny-dense', 'gemma4-tiny-moe'];

describe.each(CASES)('%s', (name) => {
  const { model, expected } = loadFixture(name);

  it('full-prompt logits match the reference within 1e-3', () => {
    const logits = model.forward([{ ids: expected.inputIds, state: model.newState() }])[0]!;
    expect(logits.length).toBe(expected.inputIds.length * model.vocabSize);
    expect(maxAbsDiff(logits, expected.logits)).toBeLessThanOrEqual(1e-3);
  });

  it('greedy continuation matches greedy_ids exactly and greedy_logits within 1e-3', () => {
    const g = greedy(model, expected.inputIds, expected.greedyIds.length);
    expect(g.ids).toEqual(Array.from(expected.greedyIds));
    const V = model.vocabSize;
    g.logits.forEach((row, i) => {
      expect(maxAbsDiff(row, expected.greedyLogits.subarray(i * V, (i + 1) * V))).toBeLessThanOrEqual(1e-3);
    });
  });
});
