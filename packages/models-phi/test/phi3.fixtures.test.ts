/**
 * Parity with the reference fixtures phi3-tiny-short (short LongRoPE table) and phi3-tiny-long
 * (long table; crossing L₀ = 32 during decode with a full re-encode). Tolerance: fixtures/README.md.
 */
import { describe, expect, it } from 'vitest';
import type { PhiSequence } from '../src/index.js';
import { greedy, fullLogits, loadFixtureModel, maxAbsDiff } from './helpers.js';

const TOL = 1e-3;

describe.each(['phi3-tiny-short', 'phi3-tiny-long'])('%s', (name) => {
  const { model, fx } = loadFixtureModel(name);
  const prompt = fx.i32('input_ids');

  it('matches the reference logits of one forward over the prompt', () => {
    const logits = fullLogits(model, prompt);
    expect(maxAbsDiff(logits, fx.f32('logits'))).toBeLessThanOrEqual(TOL);
  });

  it('reproduces greedy_ids and greedy_logits', () => {
    const g = greedy(model, prompt, 8);
    expect([...g.ids]).toEqual([...fx.i32('greedy_ids')]);
    expect(maxAbsDiff(g.logits, fx.f32('greedy_logits'))).toBeLessThanOrEqual(TOL);
  });
});

describe('phi3-tiny-long crossing', () => {
  const { model, fx } = loadFixtureModel('phi3-tiny-long');

  it('decodes a 28-token prompt past L₀ = 32, re-encoding with the long table at the crossing', () => {
    const prompt = fx.i32('crossing_input_ids');
    expect(prompt.length).toBe(28);
    const g = greedy(model, prompt, 8);
    expect([...g.ids]).toEqual([...fx.i32('crossing_greedy_ids')]);
    expect(maxAbsDiff(g.logits, fx.f32('crossing_greedy_logits'))).toBeLessThanOrEqual(TOL);
  });

  it('switches short → long exactly at the step that feeds the 33rd token', () => {
    const prompt = fx.i32('crossing_input_ids');
    const ids = fx.i32('crossing_greedy_ids');
    const state = model.newState() as PhiSequence;
    model.forward([{ ids: prompt, state }], { logits: 'last' });
    for (let s = 0; s < 4; s++) model.forward([{ ids: ids.subarray(s, s + 1), state }], { logits: 'last' });
    expect([state.offset, state.regime?.table]).toEqual([32, 'short']);
    const row = model.forward([{ ids: ids.subarray(4, 5), state }], { logits: 'last' })[0]!;
    expect([state.offset, state.regime?.table]).toEqual([33, 'long']);
    expect(maxAbsDiff(row, fx.f32('crossing_greedy_logits').subarray(5 * 320, 6 * 320))).toBeLessThanOrEqual(TOL);
  });

  it('the short table matters before the crossing: a long-from-the-start run (expectLength) differs there', () => {
    const prompt = fx.i32('crossing_input_ids');
    const ids = fx.i32('crossing_greedy_ids');
    const ref = fx.f32('crossing_greedy_logits');
    const state = model.newState();
    state.expectLength!(36);
    const rows: Float32Array[] = [model.forward([{ ids: prompt, state }], { logits: 'last' })[0]!];
    for (let s = 0; s < 7; s++) rows.push(model.forward([{ ids: ids.subarray(s, s + 1), state }], { logits: 'last' })[0]!);
    // Steps 0–4 (total ≤ 32) were short in the reference: the long keys give clearly different logits.
    for (let s = 0; s < 5; s++) expect(maxAbsDiff(rows[s]!, ref.subarray(s * 320, (s + 1) * 320))).toBeGreaterThan(1e-2);
    // From the crossing on both are fully long: equal again.
    for (let s = 5; s < 8; s++) expect(maxAbsDiff(rows[s]!, ref.subarray(s * 320, (s + 1) * 320))).toBeLessThanOrEqual(TOL);
  });
});
