/**
 * The opt-in load-time scan for NaN/Inf weights (`mlxcel generate --check-weights`, `loadModel(...,
 * { checkWeights: true })`): reads every f32 / bf16 / f16 tensor of a store once and names the first
 * tensor and element that is not finite. It touches every byte of the checkpoint (seconds per GB), so it
 * is not done by default; without it a NaN weight still fails at the first step (the logits check) with
 * the layer named. Quantized weights (U32 codes) carry their floats in `.scales` / `.biases`, which are
 * scanned like any other float tensor.
 */
import * as native from '@mlxcel/core-native';
import { MlxcelError } from './errors.js';
import { firstNonFinite } from './finite.js';
import type { WeightStore } from './checkpoint.js';

const CODES: Record<string, 0 | 1 | 2> = { F32: native.DType.F32, F16: native.DType.F16, BF16: native.DType.BF16 };
const CHUNK = 1 << 20;  // elements converted per step: bounded scratch whatever the tensor size

/** Throws E_NONFINITE_WEIGHT naming the first tensor holding NaN/Inf; returns how many tensors were scanned. */
export function scanWeights(store: WeightStore, where = 'checkpoint'): number {
  let scanned = 0;
  const buf = new Float32Array(CHUNK);
  for (const name of [...store.keys()].sort()) {
    const t = store.get(name);
    const code = CODES[t.dtype];
    if (code === undefined) continue;
    const esz = t.dtype === 'F32' ? 4 : 2;
    for (let at = 0; at < t.size; at += CHUNK) {
      const n = Math.min(CHUNK, t.size - at);
      const out = buf.subarray(0, n);
      native.toF32(t.bytes.subarray(at * esz, (at + n) * esz), code, n, out);
      const i = firstNonFinite(out);
      if (i >= 0)
        throw new MlxcelError('E_NONFINITE_WEIGHT', `${where}: tensor ${name} (${t.dtype} [${t.shape.join(', ')}]) holds ${out[i]} at element ${at + i}`);
    }
    scanned++;
  }
  return scanned;
}
