/**
 * The layer arenas' lifetime rule (@mlxcel/tensor buffers.ts: nothing a layer makes is read two layers
 * later) holds in every Gemma forward: with poisoned arenas (every array a layer makes comes from an
 * arena, which is filled with NaN when reset) each fixture still matches its reference, prompt and
 * greedy decode alike. A value read after its time would be NaN and fail the forward.
 */
import { setArenaPoison } from '@mlxcel/tensor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { greedy, loadFixture, maxAbsDiff } from './helpers.js';

beforeAll(() => setArenaPoison(true));
afterAll(() => setArenaPoison(false));

describe.each(['gemma3n-tiny', 'gemma3n-tiny-q4', 'gemma4-tiny-dense', 'gemma4-tiny-moe'])('%s with poisoned layer arenas', (name) => {
  it('matches the reference logits and greedy continuation', () => {
    const { model, expected } = loadFixture(name);
    const logits = model.forward([{ ids: expected.inputIds, state: model.newState() }])[0]!;
    expect(maxAbsDiff(logits, expected.logits)).toBeLessThanOrEqual(1e-3);
    const g = greedy(model, expected.inputIds, expected.greedyIds.length);
    expect(g.ids).toEqual(Array.from(expected.greedyIds));
  });
});
