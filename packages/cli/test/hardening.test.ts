/** CLI-level root causes: --no-chat-template, --ids range, environment variables, files that are not files. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, mlxcel } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'mlxcel-cli-harden-'));
const cacheEnv = { MLXCEL_CACHE: join(tmp, 'cache') };

describe('mlxcel input hardening', () => {
  it('generate --no-chat-template runs the raw prompt (it was read as a template file named "false")', async () => {
    const r = await mlxcel(['generate', '--demo', '--no-chat-template', '--prompt', 'Hello', '--max-tokens', '2', '--json'], { env: cacheEnv });
    expect(r.stderr).not.toMatch(/chat template file/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).stats.promptTokens).toBeGreaterThan(0);
  });

  it('trace --ids 4294967297 is refused, not run as id 1', async () => {
    const r = await mlxcel(['trace', '--model', join(FIXTURES, 'phi3-tiny-short'), '--ids', '1,4294967297', '--out', join(tmp, 't.safetensors')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--ids: 4294967297 is outside the token id range \[0, 2\^31\)/);
  });

  it.each([
    [{ MLXCEL_ISA: 'bogus' }, /^mlxcel: MLXCEL_ISA="bogus" is not a kernel variant/],
    [{ MLXCEL_THREADS: '1e9' }, /^mlxcel: MLXCEL_THREADS="1e9" must be a whole number of threads from 1 to 1024/],
  ])('%o is one clear line, no stack trace', async (env, msg) => {
    const r = await mlxcel(['inspect', '--model', join(FIXTURES, 'phi3-tiny-short')], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(msg);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it.each(['0', '-5', 'lots', ''])('serve --kv-budget %j is refused by name before anything loads', async (v) => {
    const r = await mlxcel(['serve', '--demo', '--port', '0', '--kv-budget', v], { env: cacheEnv });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(new RegExp(`--kv-budget must be a positive number of MiB \\(for example 4096\\), got "${v}"`));
  });

  it('serve --help documents --kv-budget and --no-prefix-cache', async () => {
    const r = await mlxcel(['serve', '--help']);
    expect(r.stdout).toMatch(/--kv-budget <MiB>/);
    expect(r.stdout).toMatch(/--no-prefix-cache/);
  });

  it('--prompt-file naming a directory is refused by name', async () => {
    const r = await mlxcel(['generate', '--demo', '--prompt-file', tmp], { env: cacheEnv });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--prompt-file .* is a directory, not a regular file/);
  });
});
