/**
 * Random-weight models from a config.json alone: throughput at real shapes without downloading
 * weights (`mlxcel bench --random`), and the built-in demo checkpoint.
 */
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSafetensors, type LanguageModel, type Tensor, type WeightStore } from '@mlxcel/tensor';
import { MlxcelError } from './errors.js';
import { readJson } from './load.js';
import { architectureFor } from './registry.js';

export interface RandomModelOptions {
  /** Keep only the first N layers (layer-indexed config lists are cut to match). */
  layers?: number;
  quantize?: { bits: number; groupSize: number };
  seed?: number;
}

/** A copy of config with fewer layers; per-layer lists (layer_types, sparsity patterns) cut to fit. */
export function shrinkLayers(config: Record<string, unknown>, layers: number): Record<string, unknown> {
  if (!Number.isInteger(layers) || layers < 1) throw new MlxcelError('BAD_OPTION', `--layers must be a positive integer, got ${layers}`);
  const cut = (c: Record<string, unknown>): Record<string, unknown> => {
    const n = c.num_hidden_layers;
    if (typeof n !== 'number') return c;
    const out: Record<string, unknown> = { ...c, num_hidden_layers: Math.min(n, layers) };
    for (const [k, v] of Object.entries(c)) if (Array.isArray(v) && v.length === n) out[k] = v.slice(0, Math.min(n, layers));
    // Gemma 3n: the last num_kv_shared_layers layers read the KV of the last non-shared layer of their
    // attention type, so the non-shared prefix must still hold one layer of each type present.
    if (typeof c.num_kv_shared_layers === 'number') {
      const kept = Math.min(n, layers);
      const types = Array.isArray(out.layer_types) ? (out.layer_types as string[]) : [];
      const firsts = [...new Set(types)].map((t) => types.indexOf(t));
      const need = firsts.length ? Math.max(...firsts) + 1 : 2;
      out.num_kv_shared_layers = Math.max(0, Math.min(c.num_kv_shared_layers, kept - need));
    }
    return out;
  };
  const top = cut(config);
  if (config.text_config && typeof config.text_config === 'object') top.text_config = cut(config.text_config as Record<string, unknown>);
  return top;
}

/**
 * The random checkpoint randomModel loads: the config as loaded (cut to `layers`, with the quantization
 * block) and its weight store. Exposed so other engines can be given the very same weights
 * (`pnpm bench peers` writes them to GGUF files for llama.cpp).
 */
export function randomCheckpoint(config: Record<string, unknown>, opts: RandomModelOptions = {}): { config: Record<string, unknown>; weights: WeightStore } {
  const cfg = opts.layers ? shrinkLayers(config, opts.layers) : config;
  const arch = architectureFor(cfg);
  if (!arch.randomWeights) throw new MlxcelError('UNSUPPORTED', `model_type ${String(cfg.model_type)} cannot build random weights`);
  const q = opts.quantize;
  const full = q ? { ...cfg, quantization: { group_size: q.groupSize, bits: q.bits, mode: 'affine' } } : cfg;
  return { config: full, weights: arch.randomWeights(full, { seed: opts.seed ?? 0, quantize: q }) };
}

export function randomModel(config: Record<string, unknown>, opts: RandomModelOptions = {}): LanguageModel {
  const ck = randomCheckpoint(config, opts);
  return architectureFor(ck.config).load(ck);
}

const DEMO_ASSETS = join(dirname(fileURLToPath(import.meta.url)), '..', 'assets', 'demo');
const DEMO_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'];

export function defaultCacheDir(): string {
  return process.env.MLXCEL_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'mlxcel');
}

/** Every file of a published demo directory (the weights are written last, but all must be there). */
function demoComplete(dir: string): boolean {
  return [...DEMO_FILES, 'model.safetensors'].every((f) => existsSync(join(dir, f)));
}

/**
 * The built-in demo: a tiny Phi-3-architecture checkpoint with RANDOM weights and the real
 * Llama-2/Phi-3 tokenizer, written on first use. Text it generates is meaningless by design.
 *
 * Several processes may ask for it at once on a fresh cache (three `mlxcel serve --demo` started
 * together): each builds its own temporary directory and publishes it with one rename; whoever loses
 * the race keeps the winner's copy. An existing directory is never removed while another process may
 * be renaming into it — only an incomplete one (an older run interrupted) is moved aside first.
 */
export function ensureDemoModel(cacheDir = defaultCacheDir()): string {
  const dir = join(cacheDir, 'demo-phi3-random');
  if (demoComplete(dir)) return dir;
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  for (const f of DEMO_FILES) copyFileSync(join(DEMO_ASSETS, f), join(tmp, f));
  const config = readJson(join(tmp, 'config.json'), 'demo config');
  const arch = architectureFor(config);
  if (!arch.randomWeights) throw new MlxcelError('UNSUPPORTED', 'demo architecture cannot build random weights');
  const store = arch.randomWeights(config, { seed: 0 });
  const tensors: Record<string, Tensor> = {};
  for (const k of store.keys().sort()) tensors[k] = store.get(k);
  writeSafetensors(join(tmp, 'model.safetensors'), tensors, { format: 'pt', note: 'mlxcel random-weight demo' });
  publishDemo(tmp, dir);
  return dir;
}

function publishDemo(tmp: string, dir: string): void {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      renameSync(tmp, dir);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // A non-empty target: ENOTEMPTY / EEXIST on POSIX, EPERM on Windows.
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'EPERM') throw e;
    }
    if (demoComplete(dir)) {
      rmSync(tmp, { recursive: true, force: true }); // another process published first: same seed, same bytes
      return;
    }
    // An incomplete directory from an interrupted run: move it aside (one atomic rename), then retry.
    const stale = `${dir}.stale-${process.pid}-${attempt}`;
    try {
      renameSync(dir, stale);
      rmSync(stale, { recursive: true, force: true });
    } catch {
      // another process moved it first; retry the publish
    }
  }
  rmSync(tmp, { recursive: true, force: true });
  throw new MlxcelError('DEMO_PUBLISH_FAILED', `could not publish the demo model to ${dir}: it kept changing under concurrent writers; remove it and retry`);
}
