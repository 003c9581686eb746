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

  it('--kv-cache q8 and f16 stay close to the f32 reference and keep the greedy ids', async () => {
    const dir = join(FIXTURES, 'phi3-tiny-short');
    const exp = join(dir, 'expected.safetensors');
    for (const [kind, tol] of [['f16', 0.02], ['q8', 0.2]] as const) {
      const file = join(out, `kv-${kind}.safetensors`);
      const r = await mlxcel(['trace', '--model', dir, '--ids-file', exp, '--decode', '8', '--kv-cache', kind, '--out', file]);
      expect(r.code).toBe(0);
      const got = SafetensorsFile.open(file), want = SafetensorsFile.open(exp);
      const d = maxAbs(got.get('logits').toF32(), want.get('logits').toF32());
      expect(d).toBeLessThanOrEqual(tol);
      expect(d).toBeGreaterThan(0); // really a different storage, not silently f32
      expect(Array.from(got.get('greedy_ids').toI32())).toEqual(Array.from(want.get('greedy_ids').toI32()));
    }
    const bad = await mlxcel(['trace', '--model', dir, '--ids', '1,2', '--kv-cache', 'q3', '--out', join(out, 'bad.safetensors')]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/q3.*f32, f16, bf16, q8, k8v4/);
  });

  it('trace compare prints per-tensor differences', async () => {
    const dir = join(FIXTURES, 'phi3-tiny-short');
    const r = await mlxcel(['trace', 'compare', join(dir, 'expected.safetensors'), join(FIXTURES, 'phi3-tiny-long', 'expected.safetensors')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/logits\s+\[/);
    expect(r.stdout).toMatch(/perplexity of input_ids/);
  });
});
