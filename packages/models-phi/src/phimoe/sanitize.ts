/**
 * mlx-lm's PhiMoE `sanitize` (docs/architecture/phimoe.md §3): the HF per-expert tensors
 * `block_sparse_moe.experts.{e}.w1|w3|w2.weight` become stacked `block_sparse_moe.switch_mlp.
 * gate_proj|up_proj|down_proj.weight` [E, ·, ·]; everything else keeps its name.
 */
import { MemoryWeights, MlxcelError, Tensor, type WeightStore } from '@mlxcel/tensor';

const PROJ = { w1: 'gate_proj', w3: 'up_proj', w2: 'down_proj' } as const;

export function stackPhiMoEExperts(store: WeightStore): WeightStore {
  const out = new MemoryWeights();
  const groups = new Map<string, Map<number, Tensor>>();
  const re = /^(model\.layers\.\d+\.block_sparse_moe)\.experts\.(\d+)\.(w1|w2|w3)\.weight$/;
  for (const name of store.keys()) {
    const m = re.exec(name);
    if (!m) {
      out.set(name, store.get(name));
      continue;
    }
    const key = `${m[1]}.switch_mlp.${PROJ[m[3] as keyof typeof PROJ]}.weight`;
    if (!groups.has(key)) groups.set(key, new Map());
    groups.get(key)!.set(Number(m[2]), store.get(name));
  }
  for (const [key, byExpert] of groups) {
    const E = byExpert.size;
    const first = byExpert.get(0);
    if (!first) throw new MlxcelError('E_MISSING_TENSOR', `${key}: expert 0 is missing`);
    const per = first.bytes.byteLength;
    const buf = new Uint8Array(E * per);
    for (let e = 0; e < E; e++) {
      const t = byExpert.get(e);
      if (!t || t.dtype !== first.dtype || t.shape.join() !== first.shape.join())
        throw new MlxcelError('E_SHAPE', `${key}: expert ${e} is missing or differs from expert 0`);
      buf.set(t.bytes, e * per);
    }
    out.set(key, new Tensor(first.dtype, [E, ...first.shape], buf));
  }
  return out;
}
