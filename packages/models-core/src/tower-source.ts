/**
 * What an encoder tower (audio, vision) of a multimodal Gemma checkpoint is built from, and the two
 * steps every tower loader starts with: which family's tower the config declares, and reading the
 * checkpoint folder's config and processor files.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Checkpoint, MlxcelError, type WeightStore } from '@mlxcel/tensor';
import type { Json } from './config.js';

export interface TowerSource {
  config: Json;
  weights: WeightStore;
  /** preprocessor_config.json, when the checkpoint has one. */
  preprocessor?: Json;
  /** processor_config.json, when present. */
  processor?: Json;
  /** Name used in error messages (the checkpoint folder). */
  name?: string;
}

export type TowerKind = 'audio' | 'vision';

/** The family of a config's `kind` tower: model_type gemma4 / gemma3n, or `<kind>_config.model_type` gemma4_<kind> / gemma3n_<kind>. */
export function towerFamily(config: Json, kind: TowerKind): 'gemma4' | 'gemma3n' {
  const mt = String(config.model_type ?? '');
  const sub = String((config[`${kind}_config`] as Json | undefined)?.model_type ?? '');
  if (mt === 'gemma4' || sub === `gemma4_${kind}`) return 'gemma4';
  if (mt === 'gemma3n' || sub === `gemma3n_${kind}`) return 'gemma3n';
  throw new MlxcelError('E_CONFIG', `config.model_type "${mt}" has no supported ${kind} tower (gemma4 or gemma3n)`);
}

/** Where a tower's tensors and its embedder's live in a checkpoint. */
export interface TowerPrefixes {
  /** `model.<kind>_tower.` (HF) or `<kind>_tower.` (mlx-vlm). */
  tower: string;
  /** `model.embed_<kind>.` (HF) or `embed_<kind>.` (mlx-vlm). */
  embed: string;
}

/** The HF or mlx-vlm prefixes of the `kind` tower (the first with any tensor), or E_MISSING_TENSOR naming both. */
export function towerPrefixes(store: WeightStore, kind: TowerKind, where = 'checkpoint'): TowerPrefixes {
  const keys = store.keys();
  const pick = (cands: string[], what: string): string => {
    for (const c of cands) if (keys.some((k) => k.startsWith(c))) return c;
    throw new MlxcelError('E_MISSING_TENSOR', `${where}: no ${what} tensors (looked for ${cands.map((c) => `${c}*`).join(', ')}); this checkpoint has no ${kind} tower`);
  };
  return {
    tower: pick([`model.${kind}_tower.`, `${kind}_tower.`], `${kind} tower`),
    embed: pick([`model.embed_${kind}.`, `embed_${kind}.`], `${kind} embedder`),
  };
}

/** A JSON file of a checkpoint folder: undefined when absent, E_CONFIG naming the file when it is not valid JSON. */
export function readJsonIfPresent(path: string): Json | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Json;
  } catch (e) {
    throw new MlxcelError('E_CONFIG', `${path}: not valid JSON (${(e as Error).message})`);
  }
}

/** config.json (required), the weights (opened from the folder unless given) and the processor files of a checkpoint folder. */
export function towerSourceFromDir(dir: string, weights?: WeightStore): TowerSource {
  const config = readJsonIfPresent(join(dir, 'config.json'));
  if (!config) throw new MlxcelError('E_FILE', `${dir}: no config.json`);
  return {
    config,
    weights: weights ?? Checkpoint.open(dir),
    preprocessor: readJsonIfPresent(join(dir, 'preprocessor_config.json')),
    processor: readJsonIfPresent(join(dir, 'processor_config.json')),
    name: dir,
  };
}
