/**
 * Makes checkpoint variants from a fixture for the variant tests: bf16 storage, MLX 8-bit quantization
 * (mlx-vlm prefix, split experts), pruned KV-shared weights. Each also returns the exact f32 values the
 * variant stores, so a variant can be compared with an equivalent f32 model to float rounding.
 */
import * as native from '@mlxcel/core-native';
import { MemoryWeights, QuantizedWeight, Tensor, type WeightStore } from '@mlxcel/tensor';

/** Every F32 tensor stored as BF16; `rounded` holds the same values as F32. */
export function toBf16(store: WeightStore): { bf16: MemoryWeights; rounded: MemoryWeights } {
  const bf16 = new MemoryWeights(), rounded = new MemoryWeights();
  for (const k of store.keys()) {
    const t = store.get(k);
    if (t.dtype !== 'F32') {
      bf16.set(k, t);
      rounded.set(k, t);
      continue;
    }
    const h = new Uint16Array(t.size);
    native.fromF32(t.toF32(), 2, h);
    const b = new Tensor('BF16', t.shape, new Uint8Array(h.buffer));
    bf16.set(k, b);
    rounded.set(k, Tensor.fromF32(b.toF32().slice(), t.shape));
  }
  return { bf16, rounded };
}

/** Concatenates [E, a, H] and [E, b, H] along rows → [E, a + b, H]. */
function concatRows(x: Float32Array, y: Float32Array, E: number, a: number, b: number, H: number): Float32Array {
  const out = new Float32Array(E * (a + b) * H);
  for (let e = 0; e < E; e++) {
    out.set(x.subarray(e * a * H, (e + 1) * a * H), e * (a + b) * H);
    out.set(y.subarray(e * b * H, (e + 1) * b * H), e * (a + b) * H + a * H);
  }
  return out;
}

/**
 * MLX-quantizes every module mlx-lm would (a `.weight` of rank ≥ 2 whose input dim is a multiple of
 * the group; HF fused experts are split into `experts.switch_glu.{gate,up,down}_proj` first), renames
 * `fromPrefix` to `toPrefix`, and returns the store plus an f32 store (original names and layout) of the
 * dequantized values. `override` maps a module path (original naming) to other bits.
 */
export function quantizeStore(
  store: WeightStore,
  q: { bits: number; groupSize: number },
  opts: { fromPrefix: string; toPrefix: string; override?: Record<string, number> },
): { quantized: MemoryWeights; dequantized: MemoryWeights; overrideKeys: Record<string, { bits: number; group_size: number }> } {
  const quantized = new MemoryWeights(), dequantized = new MemoryWeights();
  const overrideKeys: Record<string, { bits: number; group_size: number }> = {};
  const rename = (k: string) => (k.startsWith(opts.fromPrefix) ? opts.toPrefix + k.slice(opts.fromPrefix.length) : k);
  const quant = (path: string, data: Float32Array, shape: number[]): Float32Array => {
    const bits = opts.override?.[path] ?? q.bits;
    if (bits !== q.bits) overrideKeys[rename(path)] = { bits, group_size: q.groupSize };
    const r = QuantizedWeight.quantize(data, shape, { bits, groupSize: q.groupSize }, 'BF16');
    quantized.set(`${rename(path)}.weight`, r.packed);
    quantized.set(`${rename(path)}.scales`, r.scales);
    quantized.set(`${rename(path)}.biases`, r.biases);
    return r.weight.dequantize();
  };
  for (const k of store.keys()) {
    const t = store.get(k);
    if (k.endsWith('experts.gate_up_proj')) {
      const base = k.slice(0, -'gate_up_proj'.length);
      const [E, I2, H] = t.shape as [number, number, number];
      const I = I2 / 2, all = t.toF32();
      const gate = new Float32Array(E * I * H), up = new Float32Array(E * I * H);
      for (let e = 0; e < E; e++) {
        gate.set(all.subarray(e * I2 * H, e * I2 * H + I * H), e * I * H);
        up.set(all.subarray(e * I2 * H + I * H, (e + 1) * I2 * H), e * I * H);
      }
      const g = quant(`${base}switch_glu.gate_proj`, gate, [E, I, H]);
      const u = quant(`${base}switch_glu.up_proj`, up, [E, I, H]);
      dequantized.set(k, Tensor.fromF32(concatRows(g, u, E, I, I, H), t.shape));
      continue;
    }
    if (k.endsWith('experts.down_proj')) {
      const base = k.slice(0, -'down_proj'.length);
      dequantized.set(k, Tensor.fromF32(quant(`${base}switch_glu.down_proj`, t.toF32(), [...t.shape]), t.shape));
      continue;
    }
    const cols = t.shape[t.shape.length - 1]!;
    if (k.endsWith('.weight') && t.shape.length >= 2 && cols % q.groupSize === 0 && t.dtype !== 'U32') {
      dequantized.set(k, Tensor.fromF32(quant(k.slice(0, -'.weight'.length), t.toF32(), [...t.shape]), t.shape));
      continue;
    }
    quantized.set(rename(k), t);
    dequantized.set(k, t);
  }
  return { quantized, dequantized, overrideKeys };
}

/** A copy without the tensors whose names match. */
export function without(store: WeightStore, drop: (name: string) => boolean): MemoryWeights {
  const m = new MemoryWeights();
  for (const k of store.keys()) if (!drop(k)) m.set(k, store.get(k));
  return m;
}

/** A copy with some tensors replaced. */
export function withTensors(store: WeightStore, set: Record<string, Tensor>): MemoryWeights {
  const m = new MemoryWeights();
  for (const k of store.keys()) m.set(k, store.get(k));
  for (const [k, t] of Object.entries(set)) m.set(k, t);
  return m;
}
