/** `mlxcel trace` reproduces every text fixture: logits max |Δ| ≤ 1e-3, greedy ids exact. */
import { mkdtempSync, readFileSync } from 'node:fs';
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
    expect(bad.stderr).toMatch(/--kv-cache must be one of f32, f16, bf16, q8, k8v4, got "q3"/);
  });

  it('trace compare prints per-tensor differences', async () => {
    const dir = join(FIXTURES, 'phi3-tiny-short');
    const r = await mlxcel(['trace', 'compare', join(dir, 'expected.safetensors'), join(FIXTURES, 'phi3-tiny-long', 'expected.safetensors')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/logits\s+\[/);
    expect(r.stdout).toMatch(/perplexity of input_ids/);
  });
});

describe('mlxcel trace --dump-layers', () => {
  const out = mkdtempSync(join(tmpdir(), 'mlxcel-cli-dump-'));
  it.each([
    ['phi3-tiny-short', 'model.embed_tokens.weight'],
    ['gemma4-tiny-dense', null],
    ['gemma3n-tiny', null],
  ])('%s: embeddings + hidden_states.<l> per layer, chunked == one pass, logits unchanged', async (name, table) => {
    const dir = join(FIXTURES, name);
    const ids = join(dir, 'expected.safetensors');
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, Record<string, number> & number>;
    const text = (config.text_config ?? config) as Record<string, number>;
    const [L, H] = [text.num_hidden_layers!, text.hidden_size!];
    const plain = join(out, `${name}-plain.safetensors`), one = join(out, `${name}-one.safetensors`), chunked = join(out, `${name}-chunked.safetensors`);
    expect((await mlxcel(['trace', '--model', dir, '--ids-file', ids, '--out', plain])).code).toBe(0);
    expect((await mlxcel(['trace', '--model', dir, '--ids-file', ids, '--dump-layers', '--out', one])).code).toBe(0);
    expect((await mlxcel(['trace', '--model', dir, '--ids-file', ids, '--dump-layers', '--chunk', '3', '--out', chunked])).code).toBe(0);
    const a = SafetensorsFile.open(one), b = SafetensorsFile.open(chunked);
    const T = a.get('input_ids').shape[0]!;
    const names = ['embeddings', ...Array.from({ length: L }, (_, l) => `hidden_states.${l}`)];
    expect([...a.tensors.keys()].filter((n) => n !== 'input_ids' && n !== 'logits').sort()).toEqual([...names].sort());
    for (const n of names) {
      expect(a.get(n).shape).toEqual([T, H]);
      // Chunking reorders f32 sums: within 1e-5 of the tensor's own scale (Gemma's residual grows to O(10)).
      const x = a.get(n).toF32();
      const scale = x.reduce((m, v) => Math.max(m, Math.abs(v)), 1);
      expect(maxAbs(x, b.get(n).toF32()), n).toBeLessThanOrEqual(1e-5 * scale);
    }
    // Tapping the layers changes nothing in the logits.
    expect(maxAbs(a.get('logits').toF32(), SafetensorsFile.open(plain).get('logits').toF32())).toBe(0);
    // The layers differ from each other (each name is its own layer, not one buffer written L times).
    expect(maxAbs(a.get('hidden_states.0').toF32(), a.get(`hidden_states.${L - 1}`).toF32())).toBeGreaterThan(1e-3);
    if (table) {
      // Phi-3 embeddings are the table rows of the prompt ids, unscaled.
      const w = SafetensorsFile.open(join(dir, 'model.safetensors')).get(table).toF32();
      const tok = a.get('input_ids').toI32();
      const want = new Float32Array(T * H);
      tok.forEach((id, t) => want.set(w.subarray(id * H, (id + 1) * H), t * H));
      expect(maxAbs(a.get('embeddings').toF32(), want)).toBe(0);
    }
  });

  it('--dump-layers without prompt ids is a usage error', async () => {
    const dir = join(FIXTURES, 'phi3-tiny-short');
    const r = await mlxcel(['trace', '--model', dir, '--dump-layers', '--out', join(out, 'x.safetensors')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--ids/);
  });
});
