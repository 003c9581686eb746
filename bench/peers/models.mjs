// The models `pnpm bench peers` compares, and the random checkpoint both engines run for each.
import { join } from 'node:path';
import { randomCheckpoint, readJson } from '../../packages/engine/dist/index.js';

export const MODELS = {
  gemma3n: { config: 'fixtures/configs/unsloth--gemma-3n-E2B-it.json', label: 'Gemma 3n E2B', arch: 'gemma3n' },
  gemma4: { config: 'fixtures/configs/gemma-4-E2B-it.json', label: 'Gemma 4 E2B', arch: 'gemma4' },
  phi35: { config: 'fixtures/configs/Phi-3.5-mini-instruct.json', label: 'Phi-3.5-mini', arch: 'phi3' },
};

/**
 * The random checkpoint of model `key` (seed 0, MLX affine `bits` with group 64, `layers` deep or
 * full depth), as both engines run it. llama.cpp's gemma3n fixes the KV-sharing boundary at layer 20
 * (the E2B layout), so a cut Gemma 3n shares KV only from layer 20 on here too: both engines then
 * compute the same K/V projections.
 */
export function benchCheckpoint(root, key, bits, layers) {
  const m = MODELS[key];
  if (!m) throw new Error(`unknown model '${key}' (known: ${Object.keys(MODELS).join(', ')})`);
  let config = readJson(join(root, m.config), m.label);
  if (key === 'gemma3n' && layers) {
    const t = config.text_config;
    config = { ...config, text_config: { ...t, num_kv_shared_layers: Math.max(0, Math.min(t.num_kv_shared_layers, layers - 20)) } };
  }
  const ck = randomCheckpoint(config, { layers, quantize: { bits, groupSize: 64 }, seed: 0 });
  return { ...ck, text: ck.config.text_config ?? ck.config, model: m };
}
