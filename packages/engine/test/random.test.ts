import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { shrinkLayers } from '../src/random.js';
import { FIXTURES } from './helpers/paths.js';

const gemma3n = JSON.parse(readFileSync(join(FIXTURES, 'configs', 'unsloth--gemma-3n-E2B-it.json'), 'utf8')) as Record<string, unknown>;

describe('shrinkLayers', () => {
  it('cuts per-layer lists and keeps a KV owner of each attention type before the shared layers', () => {
    const out = shrinkLayers(gemma3n, 6).text_config as Record<string, unknown>;
    expect(out.num_hidden_layers).toBe(6);
    const types = out.layer_types as string[];
    expect(types.length).toBe(6);
    const shared = out.num_kv_shared_layers as number;
    const owners = types.slice(0, 6 - shared);
    expect(owners).toContain('full_attention');
    expect(owners).toContain('sliding_attention');
    expect(shared).toBe(1); // the first full layer is index 4, so layers 0..4 must stay non-shared
    expect((out.activation_sparsity_pattern as number[]).length).toBe(6);
  });

  it('leaves the full config alone when asked for at least its depth, and rejects bad counts', () => {
    const out = shrinkLayers(gemma3n, 100).text_config as Record<string, unknown>;
    expect(out.num_hidden_layers).toBe((gemma3n.text_config as Record<string, unknown>).num_hidden_layers);
    expect(out.num_kv_shared_layers).toBe((gemma3n.text_config as Record<string, unknown>).num_kv_shared_layers);
    expect(() => shrinkLayers(gemma3n, 0)).toThrow(/--layers/);
  });
});

describe('ensureDemoModel', () => {
  const dist = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js')).href;
  const FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'];

  /** Four processes asking for the demo at once in `cacheDir` (as three `mlxcel serve --demo` started together). */
  async function raceFour(cacheDir: string): Promise<string[]> {
    const script = `import { ensureDemoModel } from ${JSON.stringify(dist)}; process.stdout.write(ensureDemoModel(${JSON.stringify(cacheDir)}));`;
    const runs = Array.from({ length: 4 }, () => new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '', err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`ensureDemoModel exited ${code}: ${err}`))));
    }));
    return Promise.all(runs);
  }

  it('concurrent first uses on a fresh cache all get one complete directory, and no temporary one is left', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'mlxcel-demo-'));
    try {
      const dirs = await raceFour(cacheDir);
      const dir = join(cacheDir, 'demo-phi3-random');
      expect(dirs).toEqual([dir, dir, dir, dir]);
      for (const f of FILES) expect(existsSync(join(dir, f)), f).toBe(true);
      expect(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')).toMatch(/chat_template/);
      expect(readdirSync(cacheDir)).toEqual(['demo-phi3-random']);
    } finally {
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('replaces an incomplete directory (a file lost by an interrupted or racing older run)', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'mlxcel-demo-'));
    try {
      const dir = join(cacheDir, 'demo-phi3-random');
      mkdirSync(dir);
      writeFileSync(join(dir, 'model.safetensors'), 'truncated');
      writeFileSync(join(dir, 'config.json'), '{}');
      const dirs = await raceFour(cacheDir);
      expect(new Set(dirs)).toEqual(new Set([dir]));
      for (const f of FILES) expect(existsSync(join(dir, f)), f).toBe(true);
      expect(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).model_type).toBe('phi3');
      expect(readdirSync(cacheDir)).toEqual(['demo-phi3-random']);
    } finally {
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }, 120_000);
});
