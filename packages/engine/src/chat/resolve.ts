import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readRegularFile } from '@mlxcel/tensor';
import { MlxcelError } from '../errors.js';
import { readOptionalJsonObject } from '../tokenizer/config.js';

/** Where a chat template came from, and its text. */
export interface ChatTemplateSource {
  template: string;
  /** A file path, or `path#chat_template[name]` for a template inside a JSON file. */
  source: string;
}

export interface ResolveChatTemplateOptions {
  /** Model folder to look in (chat_template.jinja, chat_template.json, tokenizer_config.json). */
  dir?: string;
  /** tokenizer_config.json already parsed (skips reading it from `dir`). */
  tokenizerConfig?: Readonly<Record<string, unknown>>;
  /** A template file given by the user; wins over everything in the folder. */
  file?: string;
  /**
   * Which named template to use when the config holds a list of `{name, template}`
   * (e.g. `"default"`, `"tool_use"`). Default `"default"`.
   */
  name?: string;
}

/**
 * Find the chat template, in this order (the first that exists wins):
 * 1. `options.file` (the user's choice);
 * 2. `chat_template.jinja` in the folder (transformers ≥ 4.43 saves it there and prefers it);
 * 3. `chat_template.json` in the folder (`{"chat_template": "..."}`, written by processors);
 * 4. `chat_template` in tokenizer_config.json — a string, or a list of `{name, template}`.
 * Returns `null` when there is none (the caller decides whether that is an error).
 */
export function resolveChatTemplate(options: ResolveChatTemplateOptions): ChatTemplateSource | null {
  if (options.file !== undefined) {
    if (!existsSync(options.file)) {
      throw new MlxcelError('CHAT_TEMPLATE_NOT_FOUND', `chat template file ${options.file} does not exist`);
    }
    return { template: readRegularFile(options.file, 'chat template file', 'utf8'), source: options.file };
  }
  const dir = options.dir;
  if (dir !== undefined) {
    const jinja = join(dir, 'chat_template.jinja');
    if (existsSync(jinja)) return { template: readRegularFile(jinja, 'chat template', 'utf8'), source: jinja };
    const json = readOptionalJsonObject(dir, 'chat_template.json');
    if (json !== undefined) {
      const picked = pickTemplate(json.chat_template, options.name, join(dir, 'chat_template.json'));
      if (picked !== null) return picked;
    }
  }
  const config = options.tokenizerConfig ?? (dir !== undefined ? readOptionalJsonObject(dir, 'tokenizer_config.json') : undefined);
  if (config === undefined) return null;
  const where = dir !== undefined ? join(dir, 'tokenizer_config.json') : 'tokenizer_config.json';
  return pickTemplate(config.chat_template, options.name, where);
}

function pickTemplate(value: unknown, name: string | undefined, where: string): ChatTemplateSource | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return { template: value, source: `${where}#chat_template` };
  if (Array.isArray(value)) {
    const wanted = name ?? 'default';
    const named = value.filter(
      (t): t is { name: string; template: string } =>
        t !== null && typeof t === 'object' && typeof t.name === 'string' && typeof t.template === 'string',
    );
    const hit = named.find((t) => t.name === wanted);
    if (hit === undefined) {
      throw new MlxcelError(
        'CHAT_TEMPLATE_NOT_FOUND',
        `${where} has no chat template named ${JSON.stringify(wanted)} (available: ${named.map((t) => t.name).join(', ') || 'none'})`,
      );
    }
    return { template: hit.template, source: `${where}#chat_template[${wanted}]` };
  }
  throw new MlxcelError('CHAT_TEMPLATE_INVALID', `${where}: chat_template must be a string or a list of {name, template}`);
}
