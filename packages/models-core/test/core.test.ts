/** models-core units: config reader errors, batch checks and layout, LM head rows, caches, PRNG, random weights. */
import { describe, expect, it } from 'vitest';
import { Linear, MemoryWeights, MlxcelError, Tensor, type ForwardInput, type SequenceState } from '@mlxcel/tensor';
import {
  buildLayerCaches, checkBatch, ConfigReader, layoutRows, LmHead, ModelConfigError, outputRows, RandomWeights, seedFor, Xoshiro128,
} from '../src/index.js';

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(MlxcelError);
    return (e as MlxcelError).code;
  }
  throw new Error('expected an error');
}

describe('ConfigReader', () => {
  it('one error class with a dotted key and one code per kind of failure', () => {
    const r = new ConfigReader({ model_type: 'x', text_config: { hidden_size: 'big', layers: [1, 2] } }, 'fam', { textConfig: true });
    const err = (fn: () => unknown) => {
      try { fn(); } catch (e) { return e as ModelConfigError; }
      throw new Error('expected an error');
    };
    const a = err(() => r.int('hidden_size'));
    expect([a.key, a.code, a.family]).toEqual(['text_config.hidden_size', 'E_CONFIG_INVALID', 'fam']);
    expect(a.message).toBe('fam config.json: "text_config.hidden_size" must be an integer, got "big"');
    expect(err(() => r.int('vocab_size')).code).toBe('E_CONFIG_MISSING');
    expect(err(() => r.oneOf('act', ['silu'], 'gelu')).code).toBe('E_CONFIG_UNSUPPORTED');
    expect(err(() => r.numList('layers', 3)).key).toBe('text_config.layers');
    expect(err(() => r.modelType(['y'])).key).toBe('model_type');
    expect(err(() => new ConfigReader({ text_config: 3 }, 'fam', { textConfig: true })).key).toBe('text_config');
    expect(r.optNum('absent')).toBeNull();
    expect(r.int('absent', { default: 4 })).toBe(4);
  });
});

class FakeState implements SequenceState {
  constructor(public offset = 0) {}
  readonly nbytes = 0;
  trim(): number { return 0; }
}
const isFake = (s: unknown): s is FakeState => s instanceof FakeState;
const ctx = { family: 'toy', vocabSize: 10, maxContext: 8, isState: isFake, acceptsEmbeddingOverrides: false };

describe('checkBatch and layoutRows', () => {
  it('one code per failure, naming batch[i] and the field', () => {
    const s = new FakeState();
    expect(codeOf(() => checkBatch([], ctx))).toBe('E_INPUT');
    expect(codeOf(() => checkBatch([{ ids: new Int32Array(0), state: s }], ctx))).toBe('E_INPUT');
    expect(codeOf(() => checkBatch([{ ids: Int32Array.of(10), state: s }], ctx))).toBe('E_INPUT');
    expect(codeOf(() => checkBatch([{ ids: Int32Array.of(1), state: {} as SequenceState }], ctx))).toBe('E_STATE');
    expect(codeOf(() => checkBatch([{ ids: Int32Array.of(1), state: s }, { ids: Int32Array.of(1), state: s }], ctx))).toBe('E_STATE');
    expect(codeOf(() => checkBatch([{ ids: Int32Array.of(1), state: new FakeState(8) }], ctx))).toBe('E_CONTEXT');
    const ov = { rows: Int32Array.of(0), values: new Float32Array(4) };
    expect(codeOf(() => checkBatch([{ ids: Int32Array.of(1), state: s, embeddingOverrides: ov }], ctx))).toBe('E_INPUT');
    expect(() => checkBatch([{ ids: Int32Array.of(3, 12), state: s }], ctx)).toThrow(/batch\[0\]\.ids\[1\] = 12 is outside the vocabulary \[0, 10\)/);
    // Plain arrays are accepted and converted.
    expect(checkBatch([{ ids: [1, 2] as unknown as Int32Array, state: s }], ctx)[0]!.ids).toEqual(Int32Array.of(1, 2));
  });

  it('rows are concatenated sequence-major with absolute positions; output rows are the new ones', () => {
    const a = new FakeState(3), b = new FakeState(0);
    const checked = checkBatch([{ ids: Int32Array.of(1, 2), state: a }, { ids: Int32Array.of(4, 5, 6), state: b }] as ForwardInput[], ctx);
    // Sequence b re-feeds a prefix of 2 stored ids (as Phi does when its RoPE regime changes).
    const layout = layoutRows([
      { state: checked[0]!.state, input: checked[0]!.input, fed: checked[0]!.ids, p0: 3, newLen: 2 },
      { state: checked[1]!.state, input: checked[1]!.input, fed: Int32Array.of(7, 8, 4, 5, 6), p0: 0, newLen: 3 },
    ]);
    expect(layout.n).toBe(7);
    expect(Array.from(layout.ids)).toEqual([1, 2, 7, 8, 4, 5, 6]);
    expect(Array.from(layout.positions)).toEqual([3, 4, 0, 1, 2, 3, 4]);
    expect(layout.seqs.map((s) => [s.start, s.len])).toEqual([[0, 2], [2, 5]]);
    const all = outputRows(layout, 'all'), last = outputRows(layout, 'last');
    expect([Array.from(all.rows), all.counts]).toEqual([[0, 1, 4, 5, 6], [2, 3]]);
    expect([Array.from(last.rows), last.counts]).toEqual([[1, 6], [1, 1]]);
  });
});

describe('LmHead', () => {
  it('projects only the returned rows, then soft-caps or divides', () => {
    const H = 2, V = 3;
    const store = new MemoryWeights();
    store.set('head.weight', Tensor.fromF32(Float32Array.of(1, 0, 0, 1, 1, 1), [V, H]));
    const proj = Linear.load(store, 'head', { bias: false });
    const norm = { forward: (x: Float32Array) => x }; // identity, to check the rows and transforms exactly
    const layout = { n: 3, ids: new Int32Array(3), positions: new Int32Array(3), seqs: [{ start: 0, len: 2, newLen: 2 }, { start: 2, len: 1, newLen: 1 }] };
    const h = Float32Array.of(1, 2, 3, 4, 50, 60);
    const plain = new LmHead(norm, proj).forward(h, layout, 'last');
    expect(plain.map((r) => Array.from(r))).toEqual([[3, 4, 7], [50, 60, 110]]);
    const capped = new LmHead(norm, proj, { softcap: 30 }).forward(h, layout, 'last');
    expect(capped[1]![2]).toBeCloseTo(30 * Math.tanh(110 / 30), 4);
    const divided = new LmHead(norm, proj, { divideBy: 8 }).forward(h, layout, 'all');
    expect(divided.map((r) => r.length)).toEqual([2 * V, V]);
    expect(divided[0]![0]).toBe(Math.fround(1 / 8));
  });
});

describe('caches', () => {
  it('window null = full attention, a number = a ring, a source = a shared cache', () => {
    const c = buildLayerCaches([
      { nKvHeads: 1, headDim: 4, window: null },
      { nKvHeads: 1, headDim: 4, window: 3 },
      { nKvHeads: 1, headDim: 4, window: null, source: 0 },
    ], undefined);
    expect(c.map((x) => x.kind)).toEqual(['contiguous', 'rotating', 'shared']);
    expect(() => buildLayerCaches([{ nKvHeads: 1, headDim: 4, window: null }], 'q3')).toThrow(/q3/);
  });
});

describe('the PRNG and random weights', () => {
  it('xoshiro128** fills match single draws; seedFor separates names', () => {
    const a = new Xoshiro128(5), b = new Xoshiro128(5);
    const words = new Uint32Array(9);
    a.fillUint32(words);
    expect(Array.from(words)).toEqual(Array.from({ length: 9 }, () => b.nextUint32()));
    const u = new Float32Array(1000);
    new Xoshiro128(1).fillUniform(u, -2, 2);
    expect(Math.min(...u)).toBeGreaterThanOrEqual(-2);
    expect(Math.max(...u)).toBeLessThan(2);
    expect(seedFor(0, 'a.weight')).not.toBe(seedFor(0, 'b.weight'));
    expect(seedFor(0, 'a.weight')).not.toBe(seedFor(1, 'a.weight'));
  });

  it('lazy, deterministic per name, quantized where the group size allows', () => {
    const w = new RandomWeights({ seed: 3, quantize: { bits: 4, groupSize: 32 } });
    w.module('lin', [8, 64], { a: 0.5 });
    w.module('odd', [8, 20], { a: 0.5 }); // 20 is not a multiple of 32: stays float
    w.float('norm.weight', [8], { a: 0.1, center: 1 });
    expect(w.keys().sort()).toEqual(['lin.biases', 'lin.scales', 'lin.weight', 'norm.weight', 'odd.weight']);
    expect(w.get('lin.weight').dtype).toBe('U32');
    expect(w.get('lin.weight').shape).toEqual([8, 8]);
    expect(w.get('odd.weight').dtype).toBe('BF16');
    const again = new RandomWeights({ seed: 3 });
    again.float('norm.weight', [8], { a: 0.1, center: 1 });
    expect(Array.from(again.get('norm.weight').bytes)).toEqual(Array.from(w.get('norm.weight').bytes));
    const f = new RandomWeights({ seed: 3, dtype: 'F32' });
    f.float('n', [1000], { a: 0.1, center: 1 });
    const v = f.get('n').toF32();
    expect(Math.min(...v)).toBeGreaterThanOrEqual(0.9);
    expect(Math.max(...v)).toBeLessThan(1.1);
    expect(() => f.get('missing')).toThrow(/missing tensor missing/);
  });
});
