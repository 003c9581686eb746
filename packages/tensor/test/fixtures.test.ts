// Every checkpoint under fixtures/ (f32 HF layouts and mlx-community quantized layouts, sharded index
// included) loads through Checkpoint / loadWeight into exactly the weights an independent decode of the
// raw file gives (raw.ts parses the header itself and unpacks the MLX codes bit by bit).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Checkpoint, loadWeight, quantConfigOf, QuantizedWeight } from '../src/index.js';
import { dequantRaw, floatValues, readRaw, type RawTensor } from './raw.js';

const FIXTURES = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
const cases = readdirSync(FIXTURES).filter(
  (d) => existsSync(join(FIXTURES, d, 'config.json')) && readdirSync(join(FIXTURES, d)).some((f) => /^model.*\.safetensors$/.test(f)),
);

/** Shard files as the folder declares them: the index's weight_map when present, else model*.safetensors. */
function shardsOf(dir: string): string[] {
  const idx = join(dir, 'model.safetensors.index.json');
  if (existsSync(idx)) return [...new Set(Object.values(JSON.parse(readFileSync(idx, 'utf8')).weight_map as Record<string, string>))];
  return readdirSync(dir).filter((f) => /^model.*\.safetensors$/.test(f));
}

/** (bits, group) for module `path` read straight from config.json: a per-path entry wins over the global one. */
function quantOf(config: Record<string, unknown>, path: string): { bits: number; group: number } {
  const text = (config.text_config ?? {}) as Record<string, unknown>;
  const q = (config.quantization ?? config.quantization_config ?? text.quantization ?? text.quantization_config) as Record<string, unknown>;
  const o = q[path] as { bits?: number; group_size?: number } | undefined;
  return { bits: (o?.bits ?? q.bits) as number, group: (o?.group_size ?? q.group_size ?? 64) as number };
}

describe('fixture checkpoints load to the independently decoded weights', () => {
  it('the fixture set includes the required layouts', () => {
    expect(cases).toContain('gemma3n-tiny-q4');
    expect(cases).toContain('phimoe-tiny-q4-mlx');
    expect(cases.length).toBeGreaterThanOrEqual(10);
    expect(existsSync(join(FIXTURES, 'gemma3n-tiny-q4', 'model.safetensors.index.json'))).toBe(true);
  });

  for (const name of cases)
    it(`${name}: every tensor and every (de)quantized weight`, () => {
      const dir = join(FIXTURES, name);
      const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
      const raw = new Map<string, RawTensor>();
      for (const f of shardsOf(dir)) for (const [k, t] of readRaw(join(dir, f)).tensors) raw.set(k, t);
      const ckpt = Checkpoint.open(dir);
      expect(new Set(ckpt.keys())).toEqual(new Set(raw.keys()));

      // Raw tensors: dtype, shape and bytes.
      for (const [k, t] of raw) {
        const got = ckpt.get(k);
        expect(got.dtype, k).toBe(t.dtype);
        expect([...got.shape], k).toEqual(t.shape);
        expect(Buffer.from(got.bytes).equals(Buffer.from(t.bytes)), k).toBe(true);
      }

      // Weights as the nn layers load them.
      const quant = quantConfigOf(config);
      let quantized = 0, float = 0;
      for (const k of raw.keys()) {
        if (!k.endsWith('.weight')) continue;
        const path = k.slice(0, -'.weight'.length);
        const w = loadWeight(ckpt, path, { quant });
        const got = w.dequantize();
        if (raw.has(`${path}.scales`)) {
          quantized++;
          const { bits, group } = quantOf(config, path);
          expect(w).toBeInstanceOf(QuantizedWeight);
          expect([(w as QuantizedWeight).bits, (w as QuantizedWeight).groupSize], path).toEqual([bits, group]);
          const ref = dequantRaw(raw.get(k)!, raw.get(`${path}.scales`)!, raw.get(`${path}.biases`)!, bits, group);
          expect(w.cols, path).toBe(ref.cols);
          expect(got.length, path).toBe(ref.values.length);
          for (let i = 0; i < got.length; i++) {
            // s * q + b evaluated in f32: at most one rounding per operation.
            if (!(Math.abs(got[i]! - ref.values[i]!) <= 2 ** -23 * ref.magnitude[i]!))
              throw new Error(`${name} ${path}[${i}]: ${got[i]} vs ${ref.values[i]}`);
          }
        } else {
          float++;
          const ref = floatValues(raw.get(k)!);
          expect(got.length, path).toBe(ref.length);
          for (let i = 0; i < got.length; i++) if (got[i] !== ref[i]) throw new Error(`${name} ${k}[${i}]: ${got[i]} vs ${ref[i]}`);
        }
      }
      // Every other float tensor (biases, norms, ...) through Tensor.toF32.
      for (const [k, t] of raw) {
        if (k.endsWith('.weight') || !['F32', 'F16', 'BF16'].includes(t.dtype)) continue;
        const got = ckpt.get(k).toF32();
        const ref = floatValues(t);
        for (let i = 0; i < got.length; i++) if (got[i] !== ref[i]) throw new Error(`${name} ${k}[${i}]: ${got[i]} vs ${ref[i]}`);
      }
      if (quant) expect(quantized, 'quantized modules').toBeGreaterThan(0);
      else expect(quantized).toBe(0);
      expect(quantized + float).toBeGreaterThan(0);
    });

  it('quantized fixtures have negative scales, stacked experts and float .bias next to .biases', () => {
    const g = readRaw(join(FIXTURES, 'gemma3n-tiny-q4', 'model.safetensors')).tensors;
    const anyNegative = [...g].some(([k, t]) => k.endsWith('.scales') && floatValues(t).some((v) => v < 0));
    expect(anyNegative).toBe(true);
    const p = readRaw(join(FIXTURES, 'phimoe-tiny-q4-mlx', 'model.safetensors')).tensors;
    expect(p.get('model.layers.0.block_sparse_moe.switch_mlp.gate_proj.weight')!.shape.length).toBe(3);
    expect(p.has('model.layers.0.self_attn.q_proj.bias') && p.has('model.layers.0.self_attn.q_proj.biases')).toBe(true);
  });
});
