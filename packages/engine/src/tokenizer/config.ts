import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertRegularFile } from '@mlxcel/tensor';
import { MlxcelError } from '../errors.js';

/** Read and parse a JSON file, with an error that names the file on failure. */
export function readJsonFile(path: string): unknown {
  let text: string;
  try {
    assertRegularFile(path, 'tokenizer file');  // a FIFO would block readFileSync
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new MlxcelError('FILE_READ_FAILED', `cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new MlxcelError('JSON_INVALID', `${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Read `dir/name` as a JSON object, or return `undefined` when the file does not exist. */
export function readOptionalJsonObject(dir: string, name: string): Record<string, unknown> | undefined {
  const path = join(dir, name);
  if (!existsSync(path)) return undefined;
  const value = readJsonFile(path);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new MlxcelError('JSON_INVALID', `${path} must hold a JSON object`);
  }
  return value as Record<string, unknown>;
}

/**
 * tokenizer_config.json writes special tokens either as a string or as a serialized
 * AddedToken (`{"__type": "AddedToken", "content": "<s>", ...}`). Return the text or null.
 */
export function tokenText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  return null;
}

/** `eos_token_id` may be an int, a list of ints or null; return a list. */
export function idList(value: unknown): number[] {
  if (typeof value === 'number' && Number.isInteger(value)) return [value];
  if (Array.isArray(value)) return value.filter((v): v is number => typeof v === 'number' && Number.isInteger(v));
  return [];
}

/**
 * The generation stop ids declared next to the tokenizer: generation_config.json's
 * `eos_token_id` (the generation stop set; mlx-lm copies it over config.eos_token_id),
 * else config.json's (top level or `text_config`). Empty when neither file says.
 */
export function readConfigEosIds(dir: string): number[] {
  const gen = readOptionalJsonObject(dir, 'generation_config.json');
  const fromGen = idList(gen?.eos_token_id);
  if (fromGen.length > 0) return fromGen;
  const config = readOptionalJsonObject(dir, 'config.json');
  const fromConfig = idList(config?.eos_token_id);
  if (fromConfig.length > 0) return fromConfig;
  const textConfig = config?.text_config as Record<string, unknown> | undefined;
  return idList(textConfig?.eos_token_id);
}

/** Merge stop ids: config ids first, then the tokenizer's own EOS, without duplicates. */
export function mergeEosIds(configIds: readonly number[], tokenizerEos: number | null): number[] {
  const out: number[] = [];
  for (const id of configIds) if (!out.includes(id)) out.push(id);
  if (tokenizerEos !== null && !out.includes(tokenizerEos)) out.push(tokenizerEos);
  return out;
}
