import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDemoModel, loadModelFromDir, type LoadedModel } from '../../src/index.js';
import { CHAT_DIR } from './paths.js';

/**
 * The demo checkpoint (random weights, Llama-2/Phi-3 tokenizer, 32064 logits) with a given chat
 * template and extra special tokens in its free ids (32011 …): the tool-calling tests run each
 * family's format (its real template, its call tokens as special tokens) through a real model and
 * tokenizer without the multi-GB checkpoints. The ids differ from the real models'; the texts match.
 */
export function toolModel(template: 'gemma4' | 'phi4mini' | 'gemma3n' | 'phi3', specials: string[]): LoadedModel {
  const base = ensureDemoModel(mkdtempSync(join(tmpdir(), 'mlxcel-demo-')));
  const dir = mkdtempSync(join(tmpdir(), `mlxcel-tools-${template}-`));
  cpSync(base, dir, { recursive: true });
  const tj = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as { added_tokens: Record<string, unknown>[] };
  specials.forEach((content, i) => tj.added_tokens.push({ id: 32011 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tj));
  const cfgPath = join(dir, 'tokenizer_config.json');
  const cfg = JSON.parse(readFileSync(cfgPath, 'utf8')) as Record<string, unknown>;
  cfg.chat_template = readFileSync(join(CHAT_DIR, `${template}.jinja`), 'utf8');
  delete cfg.added_tokens_decoder;
  writeFileSync(cfgPath, JSON.stringify(cfg));
  return loadModelFromDir(dir);
}

export const GEMMA4_SPECIALS = ['<|tool_call>', '<tool_call|>', '<|"|>', '<|tool>', '<tool|>', '<|tool_response>', '<tool_response|>', '<|turn>', '<turn|>', '<|channel>', '<channel|>'];
export const PHI4_SPECIALS = ['<|tool_call|>', '<|/tool_call|>', '<|tool|>', '<|/tool|>', '<|tool_response|>'];
