/**
 * The KV-shared RoPE-offset bug (docs/architecture/gemma3n.md §10): a KV-shared layer must rotate its queries at
 * p0 + i with p0 read once before the layer loop. mlx-lm / mlx-vlm read the owner cache's offset
 * inside the shared layer, after the owner already advanced by this forward's L tokens. The model can
 * be loaded in that (wrong) mode, `sharedQueryOffset: 'owner-cache'`, and this file shows that the
 * invariance tests catch it: chunked prefill and token-by-token decoding then disagree with the single
 * pass, and the single pass disagrees with the reference, by orders of magnitude over the tolerance.
 */
import { describe, expect, it } from 'vitest';
import { Checkpoint, type LanguageModel } from '@mlxcel/tensor';
import { loadGemma3n, loadGemma4 } from '../src/index.js';
import { chunked, fixtureDir, maxAbsDiff, readConfig, readExpected } from './helpers.js';

const TOL = 1e-3;

function load(name: string, mode: 'forward-start' | 'owner-cache'): LanguageModel {
  const dir = fixtureDir(name);
  const config = readConfig(dir);
  const ctx = { config, weights: Checkpoint.open(dir) };
  return name.startsWith('gemma3n') ? loadGemma3n(ctx, { sharedQueryOffset: mode }) : loadGemma4(ctx, { sharedQueryOffset: mode });
}

describe.each(['gemma3n-tiny', 'gemma4-tiny-dense'])('%s (has KV-shared layers)', (name) => {
  const expected = readExpected(fixtureDir(name));
  const ids = expected.inputIds;
  const good = load(name, 'forward-start');
  const bad = load(name, 'owner-cache');
  const single = (m: LanguageModel) => m.forward([{ ids, state: m.newState() }])[0]!;

  it('with the offset read once per forward, chunked 5 + 9 + 10 == single pass == reference', () => {
    const s = single(good);
    expect(maxAbsDiff(s, expected.logits)).toBeLessThanOrEqual(TOL);
    expect(maxAbsDiff(chunked(good, ids, [5, 9, 10]), s)).toBeLessThanOrEqual(TOL);
  });

  it('with the offset read from the owner cache after its update, the chunked-prefill test fails', () => {
    const s = single(bad);
    const c = chunked(bad, ids, [5, 9, 10]);
    expect(maxAbsDiff(c, s)).toBeGreaterThan(50 * TOL);
    // token-by-token too (off by one position per decode step), and the single pass is itself wrong.
    expect(maxAbsDiff(chunked(bad, ids, Array.from({ length: ids.length }, () => 1)), s)).toBeGreaterThan(50 * TOL);
    expect(maxAbsDiff(s, expected.logits)).toBeGreaterThan(50 * TOL);
  });
});
