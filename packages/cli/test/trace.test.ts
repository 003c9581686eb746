/** `mlxcel trace` reproduces every text fixture: logits max |Δ| ≤ 1e-3, greedy ids exact. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SafetensorsFile } from '@mlxcel/tensor';
import { FIXTURES, mlxcel } from './helpers.js';

const CASES = ['phi3-tiny-short', 'phi3-tiny-long', 'phimoe-tiny', 'phimoe-tiny-q4-mlx', 'phi3small-tiny', 'gemma3n-tiny', 'gemma3n-tiny-q4', 'gemma4-tiny-dense', 'gemma4-tiny-moe'];

function maxAbs(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('mlxcel trace on the reference fixtures', () => {
  const out = mkdtempSync(join(tmpdir(), 'mlxcel-cli-trace-'));
  for (const name of CASES) {
    it(name, async () => {
      const dir = join(FIXTURES, name);
      const expected = SafetensorsFile.open(join(dir, 'expected.safetensors'));
      const n = expected.get('greedy_ids').shape[0]!;
      const file = join(out, `${name}.safetensors`);
      const r = await mlxcel(['trace', '--model', dir, '--ids-file', join(dir, 'expected.safetensors'), '--decode', String(n), '--out', file]);
      expect(r.stderr).toContain('wrote');
      expect(r.code).toBe(0);
      const got = SafetensorsFile.open(file);
      expect(maxAbs(got.get('logits').toF32(), expected.get('logits').toF32())).toBeLessThanOrEqual(1e-3);
      expect(Array.from(got.get('greedy_ids').toI32())).toEqual(Array.from(expected.get('greedy_ids').toI32()));
      expect(maxAbs(got.get('greedy_logits').toF32(), expected.get('greedy_logits').toF32())).toBeLessThanOrEqual(1e-3);
    });
  }

  it('chunked trace equals the single pass (phi3-tiny-short, chunk 5)', async () => {
    const dir = join(FIXTURES, 'phi3-tiny-short');
    const a = join(out, 'chunk-a.safetensors'), b = join(out, 'chunk-b.safetensors');
    expect((await mlxcel(['trace', '--model', dir, '--ids-file', join(dir, 'expected.safetensors'), '--out', a])).code).toBe(0);
    expect((await mlxcel(['trace', '--model', dir, '--ids-file', join(dir, 'expected.safetensors'), '--chunk', '5', '--out', b])).code).toBe(0);
    const cmp = await mlxcel(['trace', 'compare', a, b, '--json']);
    expect(cmp.code).toBe(0);
    const res = JSON.parse(cmp.stdout) as { tensors: { name: string; maxAbsDiff: number; decidedDisagreements?: number }[]; perplexity: { a: number; b: number } };
    const logits = res.tensors.find((t) => t.name === 'logits')!;
    expect(logits.maxAbsDiff).toBeLessThanOrEqual(1e-4);
    expect(logits.decidedDisagreements).toBe(0);
    expect(Math.abs(res.perplexity.a - res.perplexity.b) / res.perplexity.a).toBeLessThan(1e-5);
  });

  it('trace compare prints per-tensor differences', async () => {
    const dir = join(FIXTURES, 'phi3-tiny-short');
    const r = await mlxcel(['trace', 'compare', join(dir, 'expected.safetensors'), join(FIXTURES, 'phi3-tiny-long', 'expected.safetensors')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/logits\s+\[/);
    expect(r.stdout).toMatch(/perplexity of input_ids/);
  });
});
