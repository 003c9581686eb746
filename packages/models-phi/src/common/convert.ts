/**
 * Checkpoint conversion: float storage dtype (F32 / F16 / BF16) and MLX affine quantization the way
 * mlx-lm's converter does it (docs/architecture/formats.md §b): every Linear / Embedding / stacked-expert weight (rank ≥ 2
 * `.weight`) whose last dim is a multiple of the group size becomes `.weight` U32 + `.scales` + `.biases`,
 * with optional per-module overrides (`{bits, groupSize}` or false = keep float), recorded in the
 * returned config's `quantization` block exactly as mlx-lm writes it. Norms and Linear `.bias` vectors
 * stay float. Architectures whose mlx layout differs from HF (PhiMoE stacks its experts) pass a
 * `sanitize` step that runs first.
 */
import * as native from '@mlxcel/core-native';
import { MemoryWeights, QuantizedWeight, Tensor, type QuantParams, type WeightStore } from '@mlxcel/tensor';
import type { FloatDType } from '@mlxcel/models-core';

export interface ConvertOptions {
  /** Storage of float tensors (and of quantization scales/biases); default: keep each tensor's dtype. */
  dtype?: FloatDType;
  quantize?: QuantParams & { overrides?: Record<string, QuantParams | false> };
}

export interface Converted {
  config: Record<string, unknown>;
  weights: WeightStore;
}

function toDtype(t: Tensor, dtype: FloatDType | undefined): Tensor {
  if (!dtype || t.dtype === dtype || !(t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16')) return t;
  const f = t.toF32();
  if (dtype === 'F32') return Tensor.fromF32(f.slice(), t.shape);
  const out = new Uint16Array(f.length);
  native.fromF32(f, dtype === 'F16' ? 1 : 2, out);
  return new Tensor(dtype, t.shape, new Uint8Array(out.buffer));
}

export function convertWeights(
  config: Record<string, unknown>, store: WeightStore, opts: ConvertOptions, sanitize?: (s: WeightStore) => WeightStore,
): Converted {
  const src = opts.quantize && sanitize ? sanitize(store) : store;
  const out = new MemoryWeights();
  const q = opts.quantize;
  const quantBlock: Record<string, unknown> = {};
  for (const name of src.keys()) {
    const t = src.get(name);
    const path = name.endsWith('.weight') ? name.slice(0, -'.weight'.length) : null;
    const params = path !== null && q ? (q.overrides?.[path] ?? q) : false;
    const float = t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16';
    if (path === null || !params || !float || t.shape.length < 2 || t.shape[t.shape.length - 1]! % params.groupSize !== 0) {
      out.set(name, toDtype(t, opts.dtype));
      if (path !== null && q && q.overrides?.[path] === false) quantBlock[path] = false;
      continue;
    }
    const scaleDtype = opts.dtype ?? (t.dtype === 'F32' ? 'F32' : t.dtype);
    const qw = QuantizedWeight.quantize(t.toF32(), t.shape, params, scaleDtype);
    out.set(`${path}.weight`, qw.packed);
    out.set(`${path}.scales`, qw.scales);
    out.set(`${path}.biases`, qw.biases);
    if (params !== q) quantBlock[path] = { group_size: params.groupSize, bits: params.bits, mode: 'affine' };
  }
  if (!q) return { config, weights: out };
  const block = { group_size: q.groupSize, bits: q.bits, mode: 'affine', ...quantBlock };
  return { config: { ...config, quantization: block, quantization_config: { ...block } }, weights: out };
}
