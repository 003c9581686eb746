/**
 * RoPE tables per layer type, from @mlxcel/rope (which owns every frequency rule: Gemma 3n local /
 * global bases, Gemma 4 proportional RoPE on full layers; docs/architecture/gemma-common.md §5).
 */
import type { ConfigReader, Json } from '@mlxcel/models-core';
import { RopeTable } from '@mlxcel/rope';
import type { LayerType } from './layer-types.js';

/**
 * One table per (layer type, head dim). The config's `layer_types` is replaced by our normalized
 * list so that padded / absent lists resolve the same way as the model.
 */
export function ropeTables(c: ConfigReader, types: readonly LayerType[], headDims: readonly number[]): Map<LayerType, RopeTable> {
  const patchedText: Json = { ...c.text, layer_types: [...types] };
  const patched: Json = c.text === c.root ? patchedText : { ...c.root, text_config: patchedText };
  const out = new Map<LayerType, RopeTable>();
  types.forEach((t, l) => {
    if (out.has(t)) {
      if (out.get(t)!.spec.headDim !== headDims[l])
        c.fail('layer_types', `layer ${l}: ${t} layers with different head dims are not supported`, 'E_CONFIG_UNSUPPORTED');
      return;
    }
    const spec = c.rope({ layerType: t, headDim: headDims[l] }, patched);
    if (spec.layout !== 'half') c.fail('rope_parameters', `${t}: Gemma RoPE is half-split, got ${spec.layout}`, 'E_CONFIG_UNSUPPORTED');
    out.set(t, new RopeTable(spec));
  });
  return out;
}
