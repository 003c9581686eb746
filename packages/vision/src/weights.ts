/** Where the vision tower and its embedder live in a checkpoint (HF `model.` prefix vs mlx-vlm without). */
import { MlxcelError, type WeightStore } from '@mlxcel/tensor';

export interface VisionPrefixes {
  /** `model.vision_tower.` (HF) or `vision_tower.` (mlx-vlm). */
  tower: string;
  /** `model.embed_vision.` (HF) or `embed_vision.` (mlx-vlm). */
  embed: string;
}

export function visionPrefixes(store: WeightStore, where = 'checkpoint'): VisionPrefixes {
  const keys = store.keys();
  const pick = (cands: string[], what: string): string => {
    for (const c of cands) if (keys.some((k) => k.startsWith(c))) return c;
    throw new MlxcelError('E_MISSING_TENSOR', `${where}: no ${what} tensors (looked for ${cands.map((c) => `${c}*`).join(', ')}); this checkpoint has no vision tower`);
  };
  return { tower: pick(['model.vision_tower.', 'vision_tower.'], 'vision tower'), embed: pick(['model.embed_vision.', 'embed_vision.'], 'vision embedder') };
}
