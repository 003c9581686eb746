/**
 * RoPE tables per layer type, from @mlxcel/rope (which owns every frequency rule: Gemma 3n local /
 * global bases, Gemma 4 proportional RoPE on full layers, gemma4.md §6.4).
 */
import { parseRope, RopeTable } from '@mlxcel/rope';
import { MlxcelError } from '@mlxcel/tensor';
import { GemmaConfigError, type Json } from './config-read.js';
import type { LayerType } from './layer-types.js';

/**
 * One table per (layer type, head dim). `config` is the whole config.json; its `layer_types` is
 * replaced by our normalized list so that padded / absent lists resolve the same way as the model.
 */
export function ropeTables(config: Json, types: readonly LayerType[], headDims: readonly number[]): Map<LayerType, RopeTable> {
  const text = (config.text_config && typeof config.text_config === 'object' ? config.text_config : config) as Json;
  const patchedText = { ...text, layer_types: [...types] };
  const patched = text === config ? patchedText : { ...config, text_config: patchedText };
  const out = new Map<LayerType, RopeTable>();
  types.forEach((t, l) => {
    if (out.has(t)) {
      if (out.get(t)!.spec.headDim !== headDims[l])
        throw new MlxcelError('E_CONFIG', `layer ${l}: ${t} layers with different head dims are not supported`);
      return;
    }
    try {
      const spec = parseRope(patched, { layerType: t, headDim: headDims[l] });
      if (spec.layout !== 'half') throw new MlxcelError('E_CONFIG', `${t}: Gemma RoPE is half-split, got ${spec.layout}`);
      out.set(t, new RopeTable(spec));
    } catch (e) {
      if (e instanceof MlxcelError) throw e;
      // RopeConfigError carries the dotted key and a message starting with it: keep both.
      const key = (e as { key?: string }).key ?? 'rope_parameters';
      const msg = (e as Error).message;
      throw new GemmaConfigError(key, msg.startsWith(`${key}: `) ? msg.slice(key.length + 2) : msg);
    }
  });
  return out;
}
