/** Where the audio tower and its embedder live in a checkpoint (HF `model.` prefix vs mlx-vlm without). */
import { towerPrefixes, type TowerPrefixes } from '@mlxcel/models-core';
import type { WeightStore } from '@mlxcel/tensor';

export type AudioPrefixes = TowerPrefixes;

/** `model.audio_tower.` / `model.embed_audio.` (HF) or `audio_tower.` / `embed_audio.` (mlx-vlm). */
export function audioPrefixes(store: WeightStore, where = 'checkpoint'): AudioPrefixes {
  return towerPrefixes(store, 'audio', where);
}
