/** Size of a tower in a checkpoint: parameters (logical elements) and stored bytes, for `mlxcel inspect`. */
import { quantParamsFor, type QuantConfig, type WeightStore } from '@mlxcel/tensor';

export interface TowerStats {
  parameters: number;
  bytes: number;
}

export function towerStats(store: WeightStore, prefixes: readonly string[], quant?: QuantConfig): TowerStats {
  let parameters = 0, bytes = 0;
  for (const k of store.keys()) {
    if (!prefixes.some((p) => k.startsWith(p))) continue;
    const t = store.get(k);
    bytes += t.bytes.byteLength;
    if (k.endsWith('.scales') || k.endsWith('.biases')) continue;
    const path = k.replace(/\.weight$/, '');
    if (t.dtype === 'U32' && store.has(`${path}.scales`)) {
      const q = quantParamsFor(quant, path);
      parameters += q ? (t.size * 32) / q.bits : t.size;
    } else parameters += t.size;
  }
  return { parameters, bytes };
}
