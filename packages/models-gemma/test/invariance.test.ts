/**
 * Invariances every correct implementation has: token-by-token == one full forward; chunked prefill
 * (5 + 9 + 10, chunks longer than the sliding window of 8) == one pass; a batch of two prompts == each
 * alone (prefill and a decode step at different offsets); a right-padded prefill with aligned
 * per-layer inputs == the unpadded prompt, including the decode step after trimming the padding.
 */
import { describe, expect, it } from 'vitest';
import type { LanguageModel } from '@mlxcel/tensor';
import { chunked, loadFixture, maxAbsDiff } from './helpers.js';
import type { Gemma3nModel, Gemma4Model } from '../src/index.js';

const CASES = ['gemma3n-tiny', 'gemma3n-tiny-q4', 'gemma4-tiny-dense', 'gemma4-tiny-moe'];
/**
 * Different row counts take different matmul paths (GEMV for one row, tiled GEMM for many), which
 * round differently (~5e-7 relative per matmul); through 6 random-weight layers that grows to
 * ~3e-4 on some Gemma 3n logits rows. The fixture tolerance (1e-3) is used; every bug these tests
 * target moves logits by orders of magnitude more (see shared-offset.test.ts).
 */
const TOL = 1e-3;

function full(model: LanguageModel, ids: Int32Array): Float32Array {
  return model.forward([{ ids, state: model.newState() }])[0]!;
}

describe.each(CASES)('%s', (name) => {
  const { model, expected } = loadFixture(name);
  const ids = expected.inputIds;
  const reference = full(model, ids);

  it('token-by-token == full forward', () => {
    const steps = chunked(model, ids, Array.from({ length: ids.length }, () => 1));
    expect(maxAbsDiff(steps, reference)).toBeLessThanOrEqual(TOL);
  });

  it('chunked prefill 5 + 9 + 10 == single pass', () => {
    expect(maxAbsDiff(chunked(model, ids, [5, 9, 10]), reference)).toBeLessThanOrEqual(TOL);
  });

  it('a forked state continues exactly like the original and independently of it (sliding caches included)', () => {
    const k = 10, V = model.vocabSize, T = ids.length;
    const state = model.newState();
    model.forward([{ ids: ids.subarray(0, k), state }]);
    const fork = state.fork!();
    const other = state.fork!();
    expect(fork.offset).toBe(k);
    // A different continuation on one fork must not reach the others.
    model.forward([{ ids: ids.subarray(0, 3), state: other }]);
    const fromFork = model.forward([{ ids: ids.subarray(k), state: fork }])[0]!;
    const fromOriginal = model.forward([{ ids: ids.subarray(k), state }])[0]!;
    expect(maxAbsDiff(fromFork, reference.subarray(k * V, T * V))).toBeLessThanOrEqual(TOL);
    expect(maxAbsDiff(fromOriginal, reference.subarray(k * V, T * V))).toBeLessThanOrEqual(TOL);
  });

  it('a batch of two prompts == each alone (prefill, then a decode step at different offsets)', () => {
    const a = ids, b = ids.slice(3, 16).reverse();
    const sa = model.newState(), sb = model.newState();
    const [la, lb] = model.forward([{ ids: a, state: sa }, { ids: b, state: sb }]);
    expect(maxAbsDiff(la!, reference)).toBeLessThanOrEqual(TOL);
    const soloB = model.newState();
    expect(maxAbsDiff(lb!, model.forward([{ ids: b, state: soloB }])[0]!)).toBeLessThanOrEqual(TOL);
    expect(sa.offset).toBe(a.length);
    expect(sb.offset).toBe(b.length);

    const soloA = model.newState();
    model.forward([{ ids: a, state: soloA }]);
    const [da, db] = model.forward([{ ids: Int32Array.of(7), state: sa }, { ids: Int32Array.of(11), state: sb }], { logits: 'last' });
    expect(maxAbsDiff(da!, model.forward([{ ids: Int32Array.of(7), state: soloA }], { logits: 'last' })[0]!)).toBeLessThanOrEqual(TOL);
    expect(maxAbsDiff(db!, model.forward([{ ids: Int32Array.of(11), state: soloB }], { logits: 'last' })[0]!)).toBeLessThanOrEqual(TOL);
  });

  it('right-padded prefill with aligned per-layer inputs == unpadded, and decoding after trim continues identically', () => {
    const m = model as Gemma3nModel | Gemma4Model;
    const n = 21, L = 32, V = model.vocabSize;
    const prompt = ids.subarray(0, n);
    const padded = new Int32Array(L); // pad id 0 on the right
    padded.set(prompt);
    // The token component a multimodal front-end computes from the UNPADDED ids: n rows, zero-padded to L.
    const tok = m.perLayerTokenInputs(prompt);
    const state = model.newState();
    const perLayerInputs = tok ? { values: tok, rows: n } : undefined;
    const lp = model.forward([{ ids: padded, state, perLayerInputs } as never])[0]!;
    expect(maxAbsDiff(lp.subarray(0, n * V), reference.subarray(0, n * V))).toBeLessThanOrEqual(TOL);
    expect(state.trim(L - n)).toBe(L - n);
    expect(state.offset).toBe(n);

    const plain = model.newState();
    model.forward([{ ids: prompt, state: plain }]);
    const next = Int32Array.of(ids[n]!);
    const a = model.forward([{ ids: next, state }])[0]!;
    const b = model.forward([{ ids: next, state: plain }])[0]!;
    expect(maxAbsDiff(a, b)).toBeLessThanOrEqual(TOL);
    expect(maxAbsDiff(a, reference.subarray(n * V, (n + 1) * V))).toBeLessThanOrEqual(TOL);
  });

  it('logitsOut: the logits are written there (views into it), bit for bit; a short buffer fails before the pass', () => {
    const V = model.vocabSize, T = ids.length;
    const a = model.newState(), b = model.newState(), c = model.newState();
    const buf = new Float32Array(2 * V + 7).fill(NaN);
    const [pa, pb] = model.forward([{ ids, state: a }, { ids: ids.subarray(0, 5), state: b }], { logits: 'last', logitsOut: buf });
    expect(pa!.buffer).toBe(buf.buffer);
    expect(pb!.byteOffset).toBe(buf.byteOffset + V * 4);
    // The same pass into fresh arrays gives the same bits (batched rows may differ from `reference` in
    // the last bits: other row counts take other matmul paths, see TOL).
    const [fa, fb] = model.forward([{ ids, state: c }, { ids: ids.subarray(0, 5), state: model.newState() }], { logits: 'last' });
    expect(pa).toEqual(fa);
    expect(pb).toEqual(fb);
    expect(maxAbsDiff(pa!, reference.subarray((T - 1) * V))).toBeLessThanOrEqual(TOL);
    const next = Int32Array.of(ids[0]!);
    const offset = a.offset;
    expect(() => model.forward([{ ids: next, state: a }], { logits: 'last', logitsOut: new Float32Array(V - 1) })).toThrow(
      /opts\.logitsOut holds \d+ floats, but 1 logits row\(s\) of vocab \d+ need/,
    );
    expect(() => model.forward([{ ids: next, state: a }], { logits: 'last', logitsOut: new Float64Array(V) as unknown as Float32Array })).toThrow(
      /opts\.logitsOut must be a Float32Array/,
    );
    expect(a.offset).toBe(offset); // nothing ran
    // The next step into the reused buffer equals the same step into a fresh array on a state that never
    // failed (c: prefilled in the same batch shape as a).
    const reused = model.forward([{ ids: next, state: a }], { logits: 'last', logitsOut: buf })[0]!;
    expect(reused).toEqual(model.forward([{ ids: next, state: c }], { logits: 'last' })[0]!);
  });

  it('rank-1 ids as a plain array == Int32Array', () => {
    const out = model.forward([{ ids: Array.from(ids) as unknown as Int32Array, state: model.newState() }])[0]!;
    expect(maxAbsDiff(out, reference)).toBe(0);
  });
});
