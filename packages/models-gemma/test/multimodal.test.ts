/**
 * The multimodal hook: `embeddingOverrides` rows replace scaled text embeddings and are not scaled
 * themselves; their per-layer-input token component uses id 0 (docs/architecture/gemma3n.md §12, docs/architecture/gemma4.md §13); a
 * precomputed per-layer-input tensor (`perLayerInputs`) is aligned to the call's rows (§13).
 */
import { describe, expect, it } from 'vitest';
import { alignPerLayerInputs, overridesForChunk, type Gemma3nModel, type Gemma4Model } from '../src/index.js';
import { chunked, loadFixture, maxAbsDiff } from './helpers.js';

describe('alignPerLayerInputs (zero-pad when shorter, slice when longer, no copy when equal)', () => {
  const W = 3;
  const v = Float32Array.from({ length: 4 * W }, (_, i) => i + 1);
  it('equal: the same array', () => {
    expect(alignPerLayerInputs(v, 4, W, 0, 4)).toBe(v);
  });
  it('shorter: zero rows appended', () => {
    const a = alignPerLayerInputs(v, 4, W, 0, 6);
    expect(Array.from(a)).toEqual([...Array.from(v), 0, 0, 0, 0, 0, 0]);
  });
  it('longer: a view of the rows from the chunk start', () => {
    const a = alignPerLayerInputs(v, 4, W, 1, 2);
    expect(Array.from(a)).toEqual([4, 5, 6, 7, 8, 9]);
    expect(a.buffer).toBe(v.buffer);
  });
  it('partly past the end: the remaining rows, then zeros', () => {
    expect(Array.from(alignPerLayerInputs(v, 4, W, 3, 2))).toEqual([10, 11, 12, 0, 0, 0]);
  });
  it('a bad size or a start after the chunk fails', () => {
    expect(() => alignPerLayerInputs(v, 5, W, 0, 4)).toThrow(/perLayerInputs/);
    expect(() => alignPerLayerInputs(v, 4, W, -1, 4)).toThrow(/firstPosition/);
  });
});

describe.each(['gemma3n-tiny', 'gemma4-tiny-dense'])('%s per-layer inputs', (name) => {
  const { model, expected } = loadFixture(name);
  const m = model as Gemma3nModel | Gemma4Model;
  const ids = expected.inputIds;
  const ref = model.forward([{ ids, state: model.newState() }])[0]!;
  const tok = m.perLayerTokenInputs(ids)!;
  const width = tok.length / ids.length;

  it('a precomputed token component for a text prompt gives bit-identical logits', () => {
    const out = model.forward([{ ids, state: model.newState(), perLayerInputs: { values: tok, rows: ids.length } } as never])[0]!;
    expect(maxAbsDiff(out, ref)).toBe(0);
  });

  it('chunked 5 + 9 + 10 with the whole prompt precomputed slices rows [p0, p0 + L)', () => {
    const c = chunked(model, ids, [5, 9, 10], { perLayerInputs: { values: tok, rows: ids.length, firstPosition: 0 } } as never);
    expect(maxAbsDiff(c, ref)).toBeLessThanOrEqual(1e-3);
  });

  it('a wrong-sized token component is rejected', () => {
    expect(() => model.forward([{ ids, state: model.newState(), perLayerInputs: { values: tok.subarray(1), rows: ids.length } } as never])).toThrow(
      new RegExp(`rows of ${width}`),
    );
  });
});

describe('embeddingOverrides', () => {
  it('Gemma 3n: an overridden row with the scaled text embedding of an id ≥ vocab_size_per_layer_input changes nothing', () => {
    const { model, expected, store } = loadFixture('gemma3n-tiny');
    const ids = expected.inputIds.slice();
    ids[6] = 300; // ≥ 256: its PLE token component already uses id 0
    const H = model.hiddenSize;
    const row = store.get('model.language_model.embed_tokens.weight').toF32().slice(300 * H, 301 * H);
    const scaled = row.map((x) => x * Math.fround(Math.sqrt(H)));
    const plain = model.forward([{ ids, state: model.newState() }])[0]!;
    const over = model.forward([{ ids, state: model.newState(), embeddingOverrides: { rows: Int32Array.of(6), values: scaled } }])[0]!;
    expect(maxAbsDiff(over, plain)).toBeLessThanOrEqual(1e-6);
    // overrides are used as given (not multiplied by sqrt(H) again)
    const unscaled = model.forward([{ ids, state: model.newState(), embeddingOverrides: { rows: Int32Array.of(6), values: row } }])[0]!;
    expect(maxAbsDiff(unscaled, plain)).toBeGreaterThan(1e-2);
  });

  it('Gemma 4: an overridden row takes PLE id 0 (the placeholder id does not matter)', () => {
    const { model, expected, store } = loadFixture('gemma4-tiny-dense');
    const H = model.hiddenSize, V = model.vocabSize;
    const soft = store.get('model.language_model.embed_tokens.weight').toF32().slice(77 * H, 78 * H).map((x) => x * 9);
    const withId = (id: number) => {
      const ids = expected.inputIds.slice();
      ids[8] = id;
      return ids;
    };
    const o = { rows: Int32Array.of(8), values: soft };
    const a = model.forward([{ ids: withId(502), state: model.newState(), embeddingOverrides: o }])[0]!;
    const b = model.forward([{ ids: withId(0), state: model.newState(), embeddingOverrides: o }])[0]!;
    expect(maxAbsDiff(a, b)).toBe(0);
    // rows before the override are causal-only and untouched; later rows see it
    const plain = model.forward([{ ids: withId(502), state: model.newState() }])[0]!;
    expect(maxAbsDiff(a.subarray(0, 8 * V), plain.subarray(0, 8 * V))).toBe(0);
    expect(maxAbsDiff(a.subarray(8 * V), plain.subarray(8 * V))).toBeGreaterThan(1e-2);
  });

  it('chunked prefill with overridesForChunk == one pass with the whole prompt overrides', () => {
    const { model, expected } = loadFixture('gemma4-tiny-dense');
    const H = model.hiddenSize, ids = expected.inputIds;
    const rows = Int32Array.of(3, 4, 5, 12, 20);
    const values = Float32Array.from({ length: rows.length * H }, (_, i) => Math.sin(i) * 3);
    const one = model.forward([{ ids, state: model.newState(), embeddingOverrides: { rows, values } }])[0]!;
    const state = model.newState();
    const parts: Float32Array[] = [];
    for (const [s, n] of [[0, 5], [5, 9], [14, 10]] as const)
      parts.push(model.forward([{ ids: ids.subarray(s, s + n), state, embeddingOverrides: overridesForChunk({ rows, values }, s, n) }])[0]!);
    const all = new Float32Array(one.length);
    let o = 0;
    for (const p of parts) {
      all.set(p, o);
      o += p.length;
    }
    expect(maxAbsDiff(all, one)).toBeLessThanOrEqual(1e-3);
    expect(overridesForChunk({ rows, values }, 6, 5)).toBeUndefined();
    expect(Array.from(overridesForChunk({ rows, values }, 4, 10)!.rows)).toEqual([0, 1, 8]);
  });

  it('rows outside the sequence or a wrong value count are rejected', () => {
    const { model, expected } = loadFixture('gemma4-tiny-moe');
    const H = model.hiddenSize;
    const ids = expected.inputIds;
    expect(() => model.forward([{ ids, state: model.newState(), embeddingOverrides: { rows: Int32Array.of(24), values: new Float32Array(H) } }])).toThrow(
      /rows\[0\] = 24/,
    );
    expect(() => model.forward([{ ids, state: model.newState(), embeddingOverrides: { rows: Int32Array.of(1), values: new Float32Array(H - 1) } }])).toThrow(
      /embeddingOverrides/,
    );
  });
});
