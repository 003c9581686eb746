/** Where the audio tower and its embedder live in a checkpoint (HF vs mlx-vlm prefixes). */
import { MlxcelError, type WeightStore } from '@mlxcel/tensor';

export interface AudioPrefixes {
  /** `model.audio_tower.` (HF) or `audio_tower.` (mlx-vlm). */
  tower: string;
  /** `model.embed_audio.` (HF) or `embed_audio.` (mlx-vlm). */
  embed: string;
}

export function audioPrefixes(store: WeightStore, where = 'checkpoint'): AudioPrefixes {
  const keys = store.keys();
  const pick = (cands: string[], what: string): string => {
    for (const c of cands) if (keys.some((k) => k.startsWith(c))) return c;
    throw new MlxcelError('E_MISSING_TENSOR', `${where}: no ${what} tensors (looked for ${cands.map((c) => `${c}*`).join(', ')}); this checkpoint has no audio encoder`);
  };
  return { tower: pick(['model.audio_tower.', 'audio_tower.'], 'audio tower'), embed: pick(['model.embed_audio.', 'embed_audio.'], 'audio embedder') };
}
