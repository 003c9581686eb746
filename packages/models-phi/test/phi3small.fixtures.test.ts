/**
 * Parity with phi3small-tiny: block-sparse layers 0 and 2 (B = 32, 2 local blocks, V = 4, per-head
 * patterns), dense layers 1 and 3, muP, gegelu with limit, tied head, and the 91 dummy ids.
 */
import { describe, expect, it } from 'vitest';
import { fullLogits, greedy, loadFixtureModel, loadModel, maxAbsDiff } from './helpers.js';

const TOL = 1e-3;

describe('phi3small-tiny', () => {
  const { model, fx } = loadFixtureModel('phi3small-tiny');
  const prompt = fx.i32('input_ids');

  it('declares exactly the fixture dummy ids as suppressed', () => {
    expect([...model.suppressedTokenIds()]).toEqual([...fx.i32('dummy_token_ids')]);
    expect(model.suppressedTokenIds().length).toBe(91);
  });

  it('matches the reference logits of the 128-token prompt (raw: dummy columns not masked)', () => {
    expect(maxAbsDiff(fullLogits(model, prompt), fx.f32('logits'))).toBeLessThanOrEqual(TOL);
  });

  it('matches logits_b for the 100-token prompt (not a multiple of the block size)', () => {
    const ids = fx.i32('input_ids_b');
    expect(ids.length).toBe(100);
    expect(maxAbsDiff(fullLogits(model, ids), fx.f32('logits_b'))).toBeLessThanOrEqual(TOL);
  });

  it('greedy with suppression reproduces greedy_ids and greedy_logits', () => {
    const g = greedy(model, prompt, 8, { suppress: true });
    expect([...g.ids]).toEqual([...fx.i32('greedy_ids')]);
    expect(maxAbsDiff(g.logits, fx.f32('greedy_logits'))).toBeLessThanOrEqual(TOL);
  });

  it('greedy without suppression reproduces greedy_ids_unsuppressed (and picks dummy ids)', () => {
    const g = greedy(model, prompt, 8);
    const expected = fx.i32('greedy_ids_unsuppressed');
    expect([...g.ids]).toEqual([...expected]);
    const dummy = new Set(model.suppressedTokenIds());
    expect([...g.ids].some((id) => dummy.has(id))).toBe(true);
  });

  it('the block-sparse layers matter: the same weights with every layer dense miss the reference', () => {
    const dense = loadModel({ ...fx.config, dense_attention_every_n_layers: 1 }, fx.weights);
    expect(maxAbsDiff(fullLogits(dense, prompt), fx.f32('logits'))).toBeGreaterThan(1e-2);
  });
});
