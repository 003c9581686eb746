import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDemoModel, loadModelFromDir, type LoadedModel } from '../../src/index.js';

let cached: LoadedModel | null = null;

/**
 * The built-in demo checkpoint (Phi-3 architecture, random weights, real Llama-2/Phi-3 tokenizer with
 * 32064 logits), written into a temp dir once per test file.
 */
export function demoModel(): LoadedModel {
  if (!cached) cached = loadModelFromDir(ensureDemoModel(mkdtempSync(join(tmpdir(), 'mlxcel-demo-'))));
  return cached;
}
