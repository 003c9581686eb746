/** Where the vision tower and its embedder live in a checkpoint (HF `model.` prefix vs mlx-vlm without). */
import { towerPrefixes, type TowerPrefixes } from '@mlxcel/models-core';
import type { WeightStore } from '@mlxcel/tensor';

export type VisionPrefixes = TowerPrefixes;

/** `model.vision_tower.` / `model.embed_vision.` (HF) or `vision_tower.` / `embed_vision.` (mlx-vlm). */
export function visionPrefixes(store: WeightStore, where = 'checkpoint'): VisionPrefixes {
  return towerPrefixes(store, 'vision', where);
}
