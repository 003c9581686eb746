/**
 * Checks of config.json against the tensors actually present, shared by Gemma 3n and Gemma 4:
 * - before the config is parsed (so nothing per-layer is allocated yet), `num_hidden_layers` must equal
 *   the number of decoder layers in the checkpoint (`num_hidden_layers: 1e9` once allocated per-layer
 *   arrays for a minute before running out of memory);
 * - after loading, every text-tower tensor must have been read: a tensor nothing read means the config
 *   contradicts the checkpoint (`enable_moe_block: false` with expert tensors, `hidden_size_per_layer_input: 0`
 *   with per-layer weights, a wrong model_type) and the model would run with those weights ignored.
 */
import type { TrackedWeights, WeightStore } from '@mlxcel/tensor';
import { isObject, ModelConfigError, type Json } from '@mlxcel/models-core';
import { TEXT_PREFIXES } from './weights.js';

/** Upper bound on num_hidden_layers for any path without a checkpoint (random weights). */
export const MAX_LAYERS = 4096;

function towerPrefix(store: WeightStore): string | undefined {
  return TEXT_PREFIXES.find((p) => store.has(`${p}embed_tokens.weight`));
}

/** Throws E_CONFIG when num_hidden_layers differs from the decoder layers present (layers.0 … layers.N-1). */
export function checkLayerCount(store: WeightStore, config: Json, family: string): void {
  const text = isObject(config.text_config) ? config.text_config : config;
  const key = isObject(config.text_config) ? 'text_config.num_hidden_layers' : 'num_hidden_layers';
  const n = text.num_hidden_layers;
  const prefix = towerPrefix(store);
  if (typeof n !== 'number' || prefix === undefined) return;  // the parser / loader report these
  const seen = new Set<number>();
  const re = /^layers\.(\d+)\./;
  for (const k of store.keys()) {
    if (!k.startsWith(prefix)) continue;
    const m = re.exec(k.slice(prefix.length));
    if (m) seen.add(Number(m[1]));
  }
  const present = seen.size;
  if (n !== present || (present > 0 && Math.max(...seen) !== present - 1))
    throw new ModelConfigError('E_CONFIG_INVALID', key, `is ${n}, but the checkpoint holds ${present} decoder layer(s)` +
      (present ? ` (${prefix}layers.${Math.min(...seen)} … layers.${Math.max(...seen)})` : ''), family);
}

/** Multimodal towers and buffers the text model does not read; they are checked by their own loaders. */
const NOT_TEXT = /(^|\.)(vision_tower|audio_tower|embed_vision|embed_audio|multi_modal_projector)\.|rotary_emb\.inv_freq$/;

/**
 * Throws E_UNEXPECTED_TENSOR naming text-tower tensors nothing read. Tolerated, as upstream loaders do:
 * k/v projections of KV-shared layers (may be in the file, never used) and an `lm_head` when the head
 * is tied (transformers drops it too).
 */
export function checkAllTextTensorsUsed(
  tracked: TrackedWeights, family: string, cfg: { kvSources: readonly number[]; tieWordEmbeddings: boolean },
): void {
  const prefix = towerPrefix(tracked) ?? '';
  const sharedKv = /^layers\.(\d+)\.self_attn\.(k_proj|v_proj|k_norm)\./;
  // Everything but the multimodal towers is in scope, inside the text prefix or not: a stray
  // `model.layers.0.x` next to `model.language_model.*` is as unused as one inside it.
  tracked.assertAllUsed(family, (name) => {
    if (NOT_TEXT.test(name)) return false;
    if (cfg.tieWordEmbeddings && /(^|\.)lm_head\./.test(name)) return false;
    const m = name.startsWith(prefix) ? sharedKv.exec(name.slice(prefix.length)) : null;
    if (m && cfg.kvSources[Number(m[1])] !== Number(m[1])) return false;
    return true;
  });
}

/**
 * With a checkpoint, `layer_types` must name every layer. The parser pads a short list with
 * sliding_attention (the rule for truncated random-weight test configs); applied to real weights that
 * padding guesses the attention kind of the missing layers and runs them silently wrong.
 */
export function checkLayerTypesComplete(config: Json, family: string): void {
  const text = isObject(config.text_config) ? config.text_config : config;
  const key = isObject(config.text_config) ? 'text_config.layer_types' : 'layer_types';
  const types = text.layer_types, n = text.num_hidden_layers;
  if (Array.isArray(types) && typeof n === 'number' && types.length < n)
    throw new ModelConfigError('E_CONFIG_INVALID', key, `has ${types.length} entries for ${n} layers: a checkpoint's config must give the kind of every layer ` +
      '(padding with sliding_attention is only applied to random-weight test configs)', family);
}
