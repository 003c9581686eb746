/**
 * Where the text tower lives in a checkpoint. The tower's tensors live under one prefix
 * (docs/architecture/gemma-common.md §9): HF multimodal `model.language_model.`, mlx-vlm / mlx-lm Gemma 4
 * `language_model.model.`, `language_model.`, HF text-only `model.`, or none. The tensors are then read
 * through models-core's WeightLoader under that prefix, by their original names, so that per-module
 * quantization overrides (keyed by original path) apply.
 */
import { WeightLoader } from '@mlxcel/models-core';
import { MlxcelError, type WeightStore } from '@mlxcel/tensor';

export const TEXT_PREFIXES = ['model.language_model.', 'language_model.model.', 'language_model.', 'model.', ''] as const;

/** Gemma checkpoints may keep the untied head at the root or under `language_model.`. */
export const HEAD_PATHS = ['lm_head', 'language_model.lm_head'] as const;

/** A loader for the text tower: under the first prefix whose `embed_tokens.weight` exists. */
export function openTextTower(store: WeightStore, config: Record<string, unknown>): WeightLoader {
  const prefix = TEXT_PREFIXES.find((p) => store.has(`${p}embed_tokens.weight`));
  if (prefix === undefined)
    throw new MlxcelError(
      'E_MISSING_TENSOR',
      `missing tensor embed_tokens.weight: looked for ${TEXT_PREFIXES.map((p) => `"${p}embed_tokens.weight"`).join(', ')}`,
    );
  return WeightLoader.forConfig(store, config, prefix);
}
