/** Sequence state, batching contract and input validation of the Phi models. */
import { describe, expect, it } from 'vitest';
import { Phi3Model, randomPhi3Weights } from '../src/index.js';
import { fixture, fullLogits, loadFixtureModel, maxAbsDiff } from './helpers.js';

const TOL = 2e-4;

describe('input validation', () => {
  const { model } = loadFixtureModel('phi3-tiny-short');
  const other = loadFixtureModel('phi3-tiny-short').model;
  const ids = Int32Array.from([1, 2, 3]);
  const code = (fn: () => unknown): string => {
    try {
      fn();
    } catch (e) {
      return (e as { code: string }).code;
    }
    return 'no error';
  };
  it('rejects foreign or repeated states, bad ids, soft tokens, bad hints', () => {
    expect(code(() => model.forward([{ ids, state: other.newState() }]))).toBe('E_STATE');
    const s = model.newState();
    expect(code(() => model.forward([{ ids, state: s }, { ids, state: s }]))).toBe('E_STATE');
    expect(code(() => model.forward([{ ids: Int32Array.from([320]), state: model.newState() }]))).toBe('E_INPUT');
    expect(code(() => model.forward([{ ids: new Int32Array(0), state: model.newState() }]))).toBe('E_INPUT');
    expect(code(() => model.forward([]))).toBe('E_INPUT');
    expect(code(() => model.forward([{ ids, state: model.newState(), embeddingOverrides: { rows: Int32Array.from([0]), values: new Float32Array(128) } }]))).toBe('E_INPUT');
    expect(code(() => model.newState().expectLength!(-1))).toBe('E_INPUT');
    expect(code(() => model.newState().expectLength!(2.5))).toBe('E_INPUT');
  });
  it('rejects unknown KV storage kinds, and contexts past max_position_embeddings', () => {
    expect(code(() => model.newState({ kvCache: 'q3' }))).toBe('E_CACHE_STORAGE');
    expect(model.newState({ kvCache: 'f32' }).offset).toBe(0);
    expect(code(() => model.forward([{ ids: new Int32Array(129).fill(5), state: model.newState() }]))).toBe('E_CONTEXT');
  });
  it('a rejected batch leaves every state untouched', () => {
    const s = model.newState();
    model.forward([{ ids, state: s }]);
    expect(code(() => model.forward([{ ids, state: s }, { ids: Int32Array.from([999]), state: model.newState() }]))).toBe('E_INPUT');
    expect(s.offset).toBe(3);
  });
});

describe('outputs and state', () => {
  const { model, fx } = loadFixtureModel('phi3-tiny-short');
  const prompt = fx.i32('input_ids');
  const V = model.vocabSize;

  it("logits: 'last' is the last row of 'all'", () => {
    const all = fullLogits(model, prompt);
    const [last] = model.forward([{ ids: prompt, state: model.newState() }], { logits: 'last' });
    expect(last!.length).toBe(V);
    expect(maxAbsDiff(last!, all.subarray((prompt.length - 1) * V))).toBeLessThanOrEqual(TOL);
  });

  it('offset and nbytes follow the tokens fed', () => {
    const s = model.newState();
    expect([s.offset, s.nbytes]).toEqual([0, 0]);
    model.forward([{ ids: prompt, state: s }]);
    expect(s.offset).toBe(prompt.length);
    expect(s.nbytes).toBeGreaterThan(0);
  });

  it('trim then continue == a fresh run of the kept ids plus the new ones', () => {
    const s = model.newState();
    model.forward([{ ids: prompt, state: s }]);
    expect(s.trim(5)).toBe(5);
    expect(s.offset).toBe(prompt.length - 5);
    const extra = Int32Array.from([7, 8, 9]);
    const [got] = model.forward([{ ids: extra, state: s }]);
    const ids = Int32Array.from([...prompt.slice(0, prompt.length - 5), ...extra]);
    const fresh = fullLogits(model, ids);
    expect(maxAbsDiff(got!, fresh.subarray((ids.length - 3) * V))).toBeLessThanOrEqual(TOL);
    expect(s.trim(1000)).toBe(ids.length);
    expect(s.offset).toBe(0);
  });

  it('stats count every parameter of the checkpoint', () => {
    let n = 0;
    for (const k of fx.weights.keys()) n += fx.weights.get(k).size;
    expect(model.stats.parameters).toBe(n);
    expect(model.stats.weightBytes).toBeGreaterThan(0);
    expect(model.prefillChunk).toBeGreaterThan(0);
  });
});

describe('LongRoPE regime across trims', () => {
  const { model, fx } = loadFixtureModel('phi3-tiny-long');
  const prompt = fx.i32('input_ids'); // 64 tokens, long regime
  const V = model.vocabSize;
  it('a long sequence trimmed back to ≤ L₀ is re-encoded with the short table (== a fresh run)', () => {
    const s = model.newState();
    model.forward([{ ids: prompt.subarray(0, 40), state: s }]);
    s.trim(20);
    const next = prompt.subarray(20, 21);
    const [got] = model.forward([{ ids: next, state: s }]);
    const fresh = fullLogits(model, prompt.slice(0, 21));
    expect(maxAbsDiff(got!, fresh.subarray(20 * V))).toBeLessThanOrEqual(TOL);
    expect((s as unknown as { regime: { table: string } }).regime.table).toBe('short');
  });
  it('a batch mixes regimes: one sequence long, one short, each equal to its own run', () => {
    const a = model.newState(), b = model.newState();
    const [la, lb] = model.forward([{ ids: prompt, state: a }, { ids: prompt.subarray(0, 10), state: b }]);
    expect(maxAbsDiff(la!, fullLogits(model, prompt))).toBeLessThanOrEqual(TOL);
    expect(maxAbsDiff(lb!, fullLogits(model, prompt.slice(0, 10)))).toBeLessThanOrEqual(TOL);
  });
});

describe('sliding window (HF: key j visible from i iff i − W < j ≤ i)', () => {
  // A 1-layer random Phi-3 with W = 8: row i depends on tokens i−7 … i only.
  const base = { ...fixture('phi3-tiny-short').config, num_hidden_layers: 1, sliding_window: 8, rope_scaling: null, max_position_embeddings: 32, original_max_position_embeddings: 32 };
  const weights = randomPhi3Weights(base, { seed: 11 });
  const model = new Phi3Model(base, weights);
  const V = model.vocabSize;
  const a = Int32Array.from({ length: 20 }, (_, i) => (i * 37 + 5) % 320);
  const b = a.slice();
  b[0] = (a[0]! + 1) % 320;

  it('changing token 0 changes rows 0…7 and no row from 8 on', () => {
    const la = fullLogits(model, a), lb = fullLogits(model, b);
    expect(maxAbsDiff(la.subarray(7 * V, 8 * V), lb.subarray(7 * V, 8 * V))).toBeGreaterThan(1e-4);
    expect(maxAbsDiff(la.subarray(8 * V), lb.subarray(8 * V))).toBe(0);
  });
  it('ignoreSlidingWindow (mlx-lm parity) makes every later row depend on token 0', () => {
    const plain = new Phi3Model(base, weights, { ignoreSlidingWindow: true });
    const la = fullLogits(plain, a), lb = fullLogits(plain, b);
    expect(maxAbsDiff(la.subarray(19 * V), lb.subarray(19 * V))).toBeGreaterThan(1e-4);
  });
  it('decode through the rotating cache past the window == full forward', () => {
    const s = model.newState();
    const rows: Float32Array[] = [];
    for (let t = 0; t < a.length; t++) rows.push(model.forward([{ ids: a.subarray(t, t + 1), state: s }])[0]!);
    const full = fullLogits(model, a);
    for (let t = 0; t < a.length; t++) expect(maxAbsDiff(rows[t]!, full.subarray(t * V, (t + 1) * V))).toBeLessThanOrEqual(TOL);
  });
  it('trim back past keys the ring already overwrote: the sequence is rebuilt from its ids (== fresh run)', () => {
    // The ring holds 256 slots (the cache's growth step); 300 single-token steps overwrite positions 0…43.
    const cfg = { ...base, max_position_embeddings: 512, original_max_position_embeddings: 512 };
    const m = new Phi3Model(cfg, weights);
    const ids = Int32Array.from({ length: 300 }, (_, i) => (i * 53 + 11) % 320);
    const s = m.newState();
    for (let t = 0; t < ids.length; t++) m.forward([{ ids: ids.subarray(t, t + 1), state: s }], { logits: 'last' });
    expect(Math.min(...[...(s as unknown as { caches: { slotPositions(): Int32Array }[] }).caches[0]!.slotPositions()].filter((p) => p >= 0))).toBeGreaterThan(40);
    expect(s.trim(250)).toBe(250); // back to 50 tokens: position 50 needs keys 43…49
    const [got] = m.forward([{ ids: Int32Array.from([3]), state: s }]);
    const fresh = fullLogits(m, Int32Array.from([...ids.slice(0, 50), 3]));
    expect(maxAbsDiff(got!, fresh.subarray(50 * V))).toBeLessThanOrEqual(TOL);
  });
});

describe('partial rotary (Phi-4-mini style) end to end', () => {
  const fx = fixture('phi3-tiny-short');
  const rs = fx.config.rope_scaling as { short_factor: number[]; long_factor: number[] };
  const cfg = { ...fx.config, partial_rotary_factor: 0.5, rope_scaling: { ...rs, short_factor: rs.short_factor.slice(0, 8), long_factor: rs.long_factor.slice(0, 8) } };
  const model = new Phi3Model(cfg, fx.weights);
  const prompt = fx.i32('input_ids');
  const V = model.vocabSize;
  it('rotates only the first half of each head: differs from full rotary, decode == full forward', () => {
    const full = fullLogits(model, prompt);
    expect(maxAbsDiff(full, fx.f32('logits'))).toBeGreaterThan(1e-2);
    const s = model.newState();
    const rows = new Float32Array(prompt.length * V);
    for (let t = 0; t < prompt.length; t++) rows.set(model.forward([{ ids: prompt.subarray(t, t + 1), state: s }])[0]!, t * V);
    expect(maxAbsDiff(rows, full)).toBeLessThanOrEqual(TOL);
  });
});
