/**
 * `num_hidden_layers` checked against the decoder layers a checkpoint holds, before the config is parsed
 * and anything per-layer is built: `num_hidden_layers: 1e9` used to run the per-layer setup for a
 * billion layers (a hang, then out of memory) before the first missing tensor was noticed. Random
 * weights have no checkpoint; there the count is capped.
 */
import type { WeightStore } from '@mlxcel/tensor';
import { ModelConfigError } from '@mlxcel/models-core';

export const MAX_LAYERS = 4096;

export function checkLayerCount(store: WeightStore, config: Readonly<Record<string, unknown>>, family: string): void {
  const n = config.num_hidden_layers;
  if (typeof n !== 'number' || !Number.isInteger(n)) return;  // the parser names the key
  if (n > MAX_LAYERS) throw new ModelConfigError('E_CONFIG_INVALID', 'num_hidden_layers', `must be <= ${MAX_LAYERS}, got ${n}`, family);
  const seen = new Set<number>();
  for (const k of store.keys()) {
    const m = /^(?:model\.)?layers\.(\d+)\./.exec(k);
    if (m) seen.add(Number(m[1]));
  }
  if (seen.size === 0) return;  // an unknown layout: the weight loader names the missing tensor
  // More layers in the config than in the checkpoint is the dangerous direction (per-layer setup for
  // all of them first); fewer is left to the unused-tensor check, which names the extra tensors.
  if (n > Math.max(...seen) + 1 || n > seen.size)
    throw new ModelConfigError('E_CONFIG_INVALID', 'num_hidden_layers', `is ${n}, but the checkpoint holds ${seen.size} decoder layer(s) (layers.${Math.min(...seen)} … layers.${Math.max(...seen)})`, family);
}
