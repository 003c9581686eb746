/**
 * loadModel: a local checkpoint folder or a Hugging Face repo id -> model + tokenizer + templates.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertRegularFile, Checkpoint, scanWeights, type LanguageModel } from '@mlxcel/tensor';
import { loadChatTemplate, type ChatTemplate } from './chat/index.js';
import { MlxcelError } from './errors.js';
import { resolveModelPath, type DownloadModelOptions } from './hub/index.js';
import { architectureFor } from './registry.js';
import { loadTokenizer, type Tokenizer } from './tokenizer/index.js';

export interface LoadModelOptions extends DownloadModelOptions {
  /** Use this chat template file instead of the model's. */
  chatTemplateFile?: string;
  /** Load without a tokenizer (trace/bench on checkpoints that ship none). Default: required when present. */
  tokenizer?: 'auto' | 'none';
  /** Never load the vision tower (its weights stay unread on disk); image input then fails clearly. */
  noVision?: boolean;
  /**
   * Scan every f32/bf16/f16 tensor for NaN/Inf before building the model (E_NONFINITE_WEIGHT names the
   * tensor). Reads the whole checkpoint once, so it is off by default.
   */
  checkWeights?: boolean;
}

export interface LoadedModel {
  /** Resolved folder on disk. */
  dir: string;
  config: Record<string, unknown>;
  model: LanguageModel;
  /** null when the folder has no tokenizer files. */
  tokenizer: Tokenizer | null;
  chatTemplate: ChatTemplate | null;
  /** Stop ids: generation_config.json eos_token_id, else config.json's, plus the tokenizer's EOS. */
  eosIds: number[];
  generationConfig: Record<string, unknown>;
  /** Loaded with `noVision`: image input is refused. */
  noVision?: boolean;
}

export function readJson(path: string, what: string): Record<string, unknown> {
  let text: string;
  try {
    assertRegularFile(path, what);  // a FIFO would block readFileSync, a directory gives a bare EISDIR
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if (e instanceof MlxcelError) throw new MlxcelError('FILE_MISSING', e.message);
    throw new MlxcelError('FILE_MISSING', `${what}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    const v = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not a JSON object');
    return v as Record<string, unknown>;
  } catch (e) {
    throw new MlxcelError('FILE_INVALID', `${path} is not a valid JSON object (${(e as Error).message})`);
  }
}

function idList(v: unknown): number[] {
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

/** The folder's tokenizer, or null when it ships none (fixtures, bare checkpoints); other errors propagate. */
function tokenizerIfPresent(dir: string): Tokenizer | null {
  try {
    return loadTokenizer(dir);
  } catch (e) {
    if ((e as { code?: string }).code === 'TOKENIZER_FILES_MISSING') return null;
    throw e;
  }
}

/** Loads a model from a folder already on disk (no network). */
export function loadModelFromDir(dir: string, opts: Omit<LoadModelOptions, keyof DownloadModelOptions> = {}): LoadedModel {
  if (!existsSync(join(dir, 'config.json')))
    throw new MlxcelError('FILE_MISSING', `${dir} has no config.json (is it a model folder?)`);
  const config = readJson(join(dir, 'config.json'), 'model config');
  const arch = architectureFor(config, join(dir, 'config.json'));
  const weights = Checkpoint.open(dir);
  if (opts.checkWeights) scanWeights(weights, dir);
  const model = arch.load({ dir, config, weights });
  const tokenizer = opts.tokenizer === 'none' ? null : tokenizerIfPresent(dir);
  const generationConfig = existsSync(join(dir, 'generation_config.json'))
    ? readJson(join(dir, 'generation_config.json'), 'generation config')
    : {};
  const text = (config.text_config ?? {}) as Record<string, unknown>;
  const eos = new Set<number>([
    ...idList(generationConfig.eos_token_id ?? config.eos_token_id ?? text.eos_token_id),
    ...(tokenizer?.eosIds ?? []),
  ]);
  let chatTemplate: ChatTemplate | null = null;
  if (tokenizer) chatTemplate = loadChatTemplate({ dir, tokenizerConfig: tokenizer.tokenizerConfig, file: opts.chatTemplateFile });
  return { dir, config, model, tokenizer, chatTemplate, eosIds: [...eos], generationConfig, noVision: opts.noVision === true };
}

/** A local folder, or a Hugging Face repo id (`org/name[@revision]`) downloaded into the HF cache. */
export async function loadModel(dirOrRepoId: string, opts: LoadModelOptions = {}): Promise<LoadedModel> {
  const dir = await resolveModelPath(dirOrRepoId, opts);
  return loadModelFromDir(dir, opts);
}
