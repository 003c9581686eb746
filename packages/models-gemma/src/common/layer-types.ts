/**
 * `layer_types` normalization and the KV-sharing map, shared by Gemma 3n and Gemma 4.
 */
import type { ConfigReader } from '@mlxcel/models-core';

export type LayerType = 'sliding_attention' | 'full_attention';
const KINDS: readonly string[] = ['sliding_attention', 'full_attention'];

/**
 * The per-layer attention kinds. A list shorter than `num_hidden_layers` (including `[]`) is padded
 * at the tail with `sliding_attention` (engine rule for truncated and tiny configs); a
 * longer list or an unknown kind is an error naming the index. The list is kept as given otherwise:
 * HF forces the last layer to full, mlx-lm does not; we follow mlx-lm and the fixtures.
 * When the key is absent, `absent(n)` supplies the default (different per family).
 */
export function normalizeLayerTypes(cfg: ConfigReader, n: number, absent: (n: number) => LayerType[]): LayerType[] {
  const raw = cfg.raw('layer_types');
  if (raw === undefined || raw === null) return absent(n);
  if (!Array.isArray(raw)) cfg.fail('layer_types', `must be a list, got ${JSON.stringify(raw)}`);
  if (raw.length > n)
    cfg.fail('layer_types', `has ${raw.length} entries but num_hidden_layers is ${n}`);
  const out: LayerType[] = raw.map((t, i) => {
    if (typeof t !== 'string' || !KINDS.includes(t))
      cfg.fail(`layer_types[${i}]`, `is an unknown layer type ${JSON.stringify(t)} (expected ${KINDS.join(' or ')})`, 'E_CONFIG_UNSUPPORTED');
    return t as LayerType;
  });
  while (out.length < n) out.push('sliding_attention');
  return out;
}

/**
 * For each layer, the index of the layer whose KV cache it reads: itself for the first
 * F = NL - num_kv_shared_layers layers, and for l >= F the last non-shared layer of the same type
 * (HF `Gemma3nTextAttention.__init__`, `kv_shared_layer_index`). Throws when a shared layer has no
 * source of its type.
 */
export function kvSources(cfg: ConfigReader, types: readonly LayerType[], numShared: number): number[] {
  const n = types.length;
  if (numShared < 0 || numShared >= n)
    cfg.fail('num_kv_shared_layers', `must be in [0, ${n - 1}] for ${n} layers, got ${numShared}`);
  const first = n - numShared;
  const src: number[] = [];
  for (let l = 0; l < n; l++) {
    if (l < first) {
      src.push(l);
      continue;
    }
    let j = first - 1;
    while (j >= 0 && types[j] !== types[l]) j--;
    if (j < 0)
      cfg.fail('num_kv_shared_layers', `leaves layer ${l} (${types[l]}) without a source: none of the first ${first} layers is a ${types[l]} layer`);
    src.push(j);
  }
  return src;
}
