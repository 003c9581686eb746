/**
 * The layer arenas' lifetime rule (@mlxcel/tensor buffers.ts: nothing a layer makes is read two layers
 * later) holds in every Phi forward: with poisoned arenas (every array a layer makes comes from an
 * arena, which is filled with NaN when reset) each fixture still matches its reference, prompt and
 * greedy decode alike. A value read after its time would be NaN and fail the forward.
 */
import { setArenaPoison } from '@mlxcel/tensor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullLogits, greedy, loadFixtureModel, maxAbsDiff } from './helpers.js';

beforeAll(() => setArenaPoison(true));
afterAll(() => setArenaPoison(false));

describe.each(['phi3-tiny-short', 'phi3-tiny-long', 'phimoe-tiny', 'phimoe-tiny-q4-mlx', 'phi3small-tiny'])('%s with poisoned layer arenas', (name) => {
  it('matches the reference logits and greedy continuation', () => {
    const { model, fx } = loadFixtureModel(name);
    const prompt = fx.i32('input_ids');
    expect(maxAbsDiff(fullLogits(model, prompt), fx.f32('logits'))).toBeLessThanOrEqual(1e-3);
    const want = fx.i32('greedy_ids');
    const g = greedy(model, prompt, want.length, { suppress: true });
    expect([...g.ids]).toEqual([...want]);
  });
});
