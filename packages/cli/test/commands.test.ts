/** End-to-end: the CLI spawned as a user would run it. */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { weightTileLayout } from '@mlxcel/core-native';
import { SafetensorsFile } from '@mlxcel/tensor';
import { FIXTURES, mlxcel } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'mlxcel-cli-'));
const cacheEnv = { MLXCEL_CACHE: join(tmp, 'cache') };

describe('generate', () => {
  it('runs the random-weight demo and says so', async () => {
    const r = await mlxcel(['generate', '--demo', '--prompt', 'Hello', '--max-tokens', '8', '--seed', '1'], { env: cacheEnv });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/RANDOM weights/);
    expect(r.stderr).toMatch(/tok\/s/);
  });

  it('--json gives machine-readable output and the same seed gives the same tokens', async () => {
    const args = ['generate', '--demo', '--prompt', 'Hi there', '--max-tokens', '6', '--temp', '1', '--seed', '42', '--json'];
    const a = await mlxcel(args, { env: cacheEnv });
    const b = await mlxcel(args, { env: cacheEnv });
    expect(a.code).toBe(0);
    const ja = JSON.parse(a.stdout), jb = JSON.parse(b.stdout);
    expect(ja.tokens).toEqual(jb.tokens);
    expect(ja.stats.promptTokens).toBeGreaterThan(2);
    expect(ja.tokens.length).toBeGreaterThan(0);
  });

  it('reads the prompt from stdin', async () => {
    const r = await mlxcel(['generate', '--demo', '--max-tokens', '3', '--json'], { env: cacheEnv, input: 'from stdin' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).stats.promptTokens).toBeGreaterThan(2);
  });
});

describe('chat', () => {
  it('keeps the conversation over piped turns', async () => {
    const r = await mlxcel(['chat', '--demo', '--max-tokens', '4', '--seed', '3'], { env: cacheEnv, input: 'hello\nand again\n/exit\n' });
    expect(r.code).toBe(0);
    const stats = r.stderr.split('\n').filter((l) => l.startsWith('prompt '));
    expect(stats.length).toBe(2);
    // The second turn feeds only the new tokens: its prompt is shorter than the whole conversation.
    const p1 = Number(/prompt (\d+)/.exec(stats[0]!)![1]), p2 = Number(/prompt (\d+)/.exec(stats[1]!)![1]);
    expect(p2).toBeLessThan(p1 + 4 + 10);
    expect(p2).toBeGreaterThan(0);
    // The same default matmul path and KV storage as generate.
    expect(r.stderr).toContain('(--matmul balanced, --kv-cache f16)');
  });

  it('takes --matmul and --kv-cache like generate (exact: an f32 cache; a bad value is a usage error)', async () => {
    const r = await mlxcel(['chat', '--demo', '--max-tokens', '2', '--matmul', 'exact'], { env: cacheEnv, input: 'hi\n/exit\n' });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('(--matmul exact, --kv-cache f32)');
    const bad = await mlxcel(['chat', '--demo', '--matmul', 'int4'], { env: cacheEnv, input: '/exit\n' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--matmul must be "exact", "fast", "int8", "mixed" or "balanced", got "int4"/);
  });
});

describe('inspect', () => {
  it('reports architecture, parameters and quantization', async () => {
    const r = await mlxcel(['inspect', '--model', join(FIXTURES, 'phimoe-tiny-q4-mlx'), '--json']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.modelType).toBe('phimoe');
    expect(j.quantization).toEqual({ bits: 4, groupSize: 64, mode: 'affine' });
    expect(j.parameters).toBeGreaterThan(0);
    expect(j.kvCacheBytes).toBeGreaterThan(0);
  });
});

describe('bench --random', () => {
  it('builds a random model from a real config and reports throughput', async () => {
    const r = await mlxcel(['bench', '--random', join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), '--layers', '1', '--quantize', 'q4', '--prompt-tokens', '8', '--gen-tokens', '3', '--json'], { timeoutMs: 300_000 });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.prefill_tok_s).toBeGreaterThan(0);
    expect(j.decode_tok_s).toBeGreaterThan(0);
    expect(j.peak_rss_bytes).toBeGreaterThan(0);
    // The default layout: the q4 weights in tiles exactly where the kernels read them.
    expect(j.weight_layout).toBe('auto');
    if (j.weight_memory === 'resident' && weightTileLayout()) expect(j.weight_tiled_bytes).toBeGreaterThan(0);
    else expect(j.weight_tiled_bytes).toBe(0);
    // The default matmul precision, and its KV cache (engine defaultKvStorage): f16 unless --matmul exact
    // or --kv-cache says otherwise.
    expect(j.matmul).toBe('balanced');
    expect(j.kv_cache).toBe('f16');
  });

  it('KV storage: f32 with --matmul exact, what --kv-cache names otherwise; an unknown kind is an error naming it', async () => {
    const base = ['bench', '--random', join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), '--layers', '1', '--quantize', 'q4', '--prompt-tokens', '4', '--gen-tokens', '2', '--json'];
    const exact = await mlxcel([...base, '--matmul', 'exact'], { timeoutMs: 300_000 });
    expect(exact.code).toBe(0);
    expect(JSON.parse(exact.stdout).kv_cache).toBe('f32');
    const named = await mlxcel([...base, '--kv-cache', 'q8'], { timeoutMs: 300_000 });
    expect(named.code).toBe(0);
    expect(JSON.parse(named.stdout).kv_cache).toBe('q8');
    const batched = await mlxcel([...base, '--concurrency', '2'], { timeoutMs: 300_000 });
    expect(batched.code).toBe(0);
    expect(JSON.parse(batched.stdout).kv_cache).toBe('f16');
    const bad = await mlxcel(['generate', '--demo', '--prompt', 'Hi', '--max-tokens', '2', '--kv-cache', 'f8'], { env: cacheEnv });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--kv-cache must be one of f32, f16, bf16, q8, k8v4, got "f8"/);
    const badMatmul = await mlxcel(['generate', '--demo', '--prompt', 'Hi', '--max-tokens', '2', '--matmul', 'int4'], { env: cacheEnv });
    expect(badMatmul.code).not.toBe(0);
    expect(badMatmul.stderr).toMatch(/--matmul must be "exact", "fast", "int8", "mixed" or "balanced", got "int4"/);
  });

  it('--weight-layout rows keeps the checkpoint layout; a bad value is a usage error naming the flag', async () => {
    const r = await mlxcel(['bench', '--random', join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), '--layers', '1', '--quantize', 'q4', '--prompt-tokens', '4', '--gen-tokens', '2', '--weight-layout', 'rows', '--json'], { timeoutMs: 300_000 });
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.weight_layout).toBe('rows');
    expect(j.weight_tiled_bytes).toBe(0);
    const bad = await mlxcel(['bench', '--random', join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), '--weight-layout', 'tiles']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--weight-layout must be "auto" or "rows", got "tiles"/);
  });

  it('--profile-shapes splits the matmul time by weight shape; --profile with --concurrency is a usage error', async () => {
    const r = await mlxcel(['bench', '--random', join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), '--layers', '1', '--quantize', 'q4', '--prompt-tokens', '20', '--gen-tokens', '3', '--profile-shapes', '--json'], { timeoutMs: 300_000 });
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    // Phi-3.5-mini: hidden 3072, qkv_proj [9216 x 3072], gate_up_proj [16384 x 3072], down_proj [3072 x 8192].
    expect(j.profile.prefill['matmul (GEMM, M > 16) [9216 x 3072]'].calls).toBe(1);
    expect(j.profile.decode['matmul (GEMV, M <= 16) [16384 x 3072]'].calls).toBe(2);
    expect(j.profile.decode['matmul (GEMV, M <= 16) [3072 x 8192]'].calls).toBe(2);
    expect(j.profile.decode['matmul (GEMV, M <= 16)']).toBeUndefined();
    const bad = await mlxcel(['bench', '--random', join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), '--profile', '--concurrency', '2']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--profile measures one stream: drop --concurrency/);
  });

  it('--concurrency runs requests together through the batching scheduler', async () => {
    const r = await mlxcel(['bench', '--random', join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), '--layers', '1', '--quantize', 'q4', '--prompt-tokens', '6', '--gen-tokens', '4', '--concurrency', '3', '--json'], { timeoutMs: 300_000 });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.concurrency).toBe(3);
    expect(j.aggregate_decode_tok_s).toBeGreaterThan(0);
    expect(j.per_request_decode_tok_s).toBeCloseTo(j.aggregate_decode_tok_s / 3, 6);
    const bad = await mlxcel(['bench', '--random', join(FIXTURES, 'configs', 'Phi-3.5-mini-instruct.json'), '--concurrency', '0']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--concurrency must be an integer in \[1, 256\]/);
  });
});

describe('quantize', () => {
  it('quantizes a fixture to 8-bit and the result traces close to the original', async () => {
    const out = join(tmp, 'phi3-q8');
    const q = await mlxcel(['quantize', '--model', join(FIXTURES, 'phi3-tiny-short'), '--out', out, '--bits', '8', '--group-size', '32']);
    expect(q.code).toBe(0);
    const cfg = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(cfg.quantization).toEqual({ group_size: 32, bits: 8, mode: 'affine' });
    const f = SafetensorsFile.open(join(out, 'model.safetensors'));
    expect(f.has('model.layers.0.self_attn.qkv_proj.scales')).toBe(true);
    expect(f.has('model.layers.0.input_layernorm.scales')).toBe(false);
    const exp = join(FIXTURES, 'phi3-tiny-short', 'expected.safetensors');
    const t = await mlxcel(['trace', '--model', out, '--ids-file', exp, '--out', join(tmp, 'q8.safetensors')]);
    expect(t.code).toBe(0);
    const got = SafetensorsFile.open(join(tmp, 'q8.safetensors')).get('logits').toF32();
    const want = SafetensorsFile.open(exp).get('logits').toF32();
    let m = 0, scale = 0;
    for (let i = 0; i < got.length; i++) { m = Math.max(m, Math.abs(got[i]! - want[i]!)); scale = Math.max(scale, Math.abs(want[i]!)); }
    expect(m / scale).toBeLessThan(0.05); // 8-bit weights: close to, not equal to, the f32 reference
    expect(m).toBeGreaterThan(0);
  });

  it('refuses a non-empty output folder', async () => {
    const out = join(tmp, 'busy');
    writeFileSync(join(tmp, 'x'), '');
    const r = await mlxcel(['quantize', '--model', join(FIXTURES, 'phi3-tiny-short'), '--out', tmp]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/not empty/);
    expect(existsSync(out)).toBe(false);
  });
});

describe('errors a user can cause: one clear line, non-zero exit, no stack', () => {
  const oneLine = (s: string) => s.trim().split('\n')[0]!;
  it('bad model path', async () => {
    const r = await mlxcel(['generate', '--model', join(tmp, 'nope'), '--prompt', 'x']);
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toMatch(/^mlxcel: .*nope/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
  it('bad flag value', async () => {
    const r = await mlxcel(['generate', '--demo', '--max-tokens', 'lots', '--prompt', 'x'], { env: cacheEnv });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--max-tokens must be an integer/);
  });
  it('unknown model type lists the supported ones', async () => {
    const dir = join(tmp, 'weird');
    (await import('node:fs')).mkdirSync(dir);
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: 'llama9' }));
    const r = await mlxcel(['inspect', '--model', dir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/llama9.*not supported.*phi3/);
  });
  it('prompt longer than the context', async () => {
    const r = await mlxcel(['generate', '--demo', '--prompt', 'word '.repeat(5000), '--max-tokens', '1'], { env: cacheEnv });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/context/);
  });
  it('audio on a model without an audio tower', async () => {
    const wav = join(tmp, 'x.wav');
    writeFileSync(wav, 'not a wav');
    const r = await mlxcel(['generate', '--demo', '--prompt', 'x', '--audio', wav], { env: cacheEnv });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/audio/);
  });
  it('--verbose adds the stack', async () => {
    const r = await mlxcel(['generate', '--model', join(tmp, 'nope'), '--prompt', 'x', '--verbose']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/\n\s+at /);
  });
});
