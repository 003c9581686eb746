/**
 * Invariances on every Phi fixture: token-by-token decode == full forward, chunked prefill (5, 16) ==
 * single pass, a batch of two different prompts == each alone (prefill and a batched decode step).
 *
 * LongRoPE: a prompt longer than L₀ is long from the first token in a single pass, but token-by-token
 * (or chunk-by-chunk) without a length hint it is short until the crossing and re-encoded there
 * (docs/architecture/phi3.md §4.4). So rows before the crossing are compared only when the state was told the length
 * to expect (`expectLength`, what the engine's prefill does);
 * rows from the crossing on must match in both cases.
 */
import { describe, expect, it } from 'vitest';
import type { LanguageModel } from '@mlxcel/tensor';
import { chunkedLogits, fullLogits, loadFixtureModel, maxAbsDiff } from './helpers.js';

// Same math through different kernels (GEMV vs tiled GEMM, other summation orders): f32 rounding only.
const TOL = 2e-4;

const CASES = ['phi3-tiny-short', 'phi3-tiny-long', 'phimoe-tiny', 'phimoe-tiny-q4-mlx', 'phi3small-tiny'];

function rows(x: Float32Array, V: number, from: number, to: number): Float32Array {
  return x.subarray(from * V, to * V);
}

/** First row whose total length exceeds L₀ when fed incrementally (0 when there is no regime switch). */
function firstLongRow(model: LanguageModel, T: number): number {
  const s = model.config.rope_scaling as { type?: string } | null | undefined;
  const l0 = model.config.original_max_position_embeddings as number | undefined;
  if (!s || l0 === undefined || T <= l0) return 0;
  return l0; // row index l0 is token number l0 + 1
}

function tokenByToken(model: LanguageModel, ids: Int32Array, opts: { expectLength?: number } = {}): Float32Array {
  return chunkedLogits(model, ids, 1, opts);
}

describe.each(CASES)('%s', (name) => {
  const { model, fx } = loadFixtureModel(name);
  const V = model.vocabSize;
  const prompt = fx.i32('input_ids');
  const T = prompt.length;
  const full = fullLogits(model, prompt);
  const cross = firstLongRow(model, T);

  it('token-by-token decode == full forward', () => {
    const inc = tokenByToken(model, prompt);
    expect(maxAbsDiff(rows(inc, V, cross, T), rows(full, V, cross, T))).toBeLessThanOrEqual(TOL);
    // Before the crossing the incremental rows are short-table rows: really different (the check bites).
    if (cross > 0) expect(maxAbsDiff(rows(inc, V, 0, cross), rows(full, V, 0, cross))).toBeGreaterThan(1e-2);
    const hinted = tokenByToken(model, prompt, { expectLength: T });
    expect(maxAbsDiff(hinted, full)).toBeLessThanOrEqual(TOL);
  });

  it.each([5, 16])('chunked prefill (chunk %i) == single pass', (chunk) => {
    const c = chunkedLogits(model, prompt, chunk);
    // Rows of the chunk that crosses L₀ are recomputed long too: compare from that chunk's start.
    const from = Math.floor(cross / chunk) * chunk;
    expect(maxAbsDiff(rows(c, V, from, T), rows(full, V, from, T))).toBeLessThanOrEqual(TOL);
    if (from > 0) expect(maxAbsDiff(rows(c, V, 0, from), rows(full, V, 0, from))).toBeGreaterThan(1e-2);
    expect(maxAbsDiff(chunkedLogits(model, prompt, chunk, { expectLength: T }), full)).toBeLessThanOrEqual(TOL);
  });

  it('a forked state continues exactly like the original and independently of it', () => {
    const k = Math.min(10, T - 2);
    const state = model.newState();
    state.expectLength!(T);
    model.forward([{ ids: prompt.subarray(0, k), state }]);
    const fork = state.fork!();
    const other = state.fork!();
    expect(fork.offset).toBe(k);
    // A different continuation on one fork must not reach the others.
    model.forward([{ ids: prompt.subarray(0, 3), state: other }]);
    const fromFork = model.forward([{ ids: prompt.subarray(k), state: fork }])[0]!;
    const fromOriginal = model.forward([{ ids: prompt.subarray(k), state }])[0]!;
    expect(maxAbsDiff(fromFork, rows(full, V, k, T))).toBeLessThanOrEqual(TOL);
    expect(maxAbsDiff(fromOriginal, rows(full, V, k, T))).toBeLessThanOrEqual(TOL);
  });

  it('a batch of two different prompts == each alone (prefill, then a batched decode step)', () => {
    const other = prompt.slice(3, Math.min(T, 23)).reverse();
    const a = model.newState(), b = model.newState();
    const [la, lb] = model.forward([{ ids: prompt, state: a }, { ids: other, state: b }]);
    expect(maxAbsDiff(la!, full)).toBeLessThanOrEqual(TOL);
    const aloneB = fullLogits(model, other);
    expect(maxAbsDiff(lb!, aloneB)).toBeLessThanOrEqual(TOL);
    // One decode step for both (different offsets) in one batch == each alone.
    const na = new Int32Array([prompt[1]!]), nb = new Int32Array([other[0]!]);
    const [da, db] = model.forward([{ ids: na, state: a }, { ids: nb, state: b }]);
    const sa = model.newState(), sb = model.newState();
    model.forward([{ ids: prompt, state: sa }]);
    model.forward([{ ids: other, state: sb }]);
    expect(maxAbsDiff(da!, model.forward([{ ids: na, state: sa }])[0]!)).toBeLessThanOrEqual(TOL);
    expect(maxAbsDiff(db!, model.forward([{ ids: nb, state: sb }])[0]!)).toBeLessThanOrEqual(TOL);
  });
});
