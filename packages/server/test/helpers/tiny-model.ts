/**
 * A tiny Phi-3 checkpoint built the way the demo is (`mlxcel generate --demo`): the demo's real
 * Llama-2/Phi-3 tokenizer and chat template, random weights at a smaller width and depth so a server
 * starts in a second. Built once per test run into the OS temp folder.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { architectureFor } from '@mlxcel/engine';
import { writeSafetensors, type Tensor } from '@mlxcel/tensor';

const DEMO = fileURLToPath(new URL('../../../engine/assets/demo/', import.meta.url));

export function tinyModel(): string {
  const dir = join(tmpdir(), 'mlxcel-server-test-model-v1');
  if (existsSync(join(dir, 'model.safetensors'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  for (const f of ['generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(DEMO, f), join(tmp, f));
  const config = {
    ...(JSON.parse(readFileSync(join(DEMO, 'config.json'), 'utf8')) as Record<string, unknown>),
    hidden_size: 64, intermediate_size: 128, num_attention_heads: 2, num_key_value_heads: 2, num_hidden_layers: 1,
  };
  writeFileSync(join(tmp, 'config.json'), JSON.stringify(config, null, 2));
  const store = architectureFor(config).randomWeights!(config, { seed: 1 });
  const tensors: Record<string, Tensor> = {};
  for (const k of store.keys().sort()) tensors[k] = store.get(k);
  writeSafetensors(join(tmp, 'model.safetensors'), tensors, { format: 'pt' });
  try {
    renameSync(tmp, dir);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another test file built it first
  }
  return dir;
}
