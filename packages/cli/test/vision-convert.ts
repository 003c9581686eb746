/**
 * Builds, from an HF-layout vision fixture, what an mlx-vlm conversion looks like (no `model.` prefix,
 * text tower under `language_model.model.`, every 4-D conv kernel channels-last, 4-bit affine text
 * linears/embeddings and multimodal embedder matrices whose last dim is a multiple of 64, vision tower
 * float) plus its HF-layout twin whose quantized weights are replaced by their dequantized values: the
 * two must trace alike, and the vision tensors must still match the fixture.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Checkpoint, QuantizedWeight, Tensor, writeSafetensors } from '@mlxcel/tensor';

const GROUP = 64;

function mlxName(name: string): string {
  if (name.startsWith('model.language_model.')) return `language_model.model.${name.slice('model.language_model.'.length)}`;
  if (name.startsWith('model.')) return name.slice('model.'.length);
  return name;
}

function channelsLast(t: Tensor): Tensor {
  const [o, i, kh, kw] = t.shape as [number, number, number, number];
  const src = t.toF32();
  const out = new Float32Array(src.length);
  for (let a = 0; a < o; a++)
    for (let b = 0; b < i; b++)
      for (let y = 0; y < kh; y++) for (let x = 0; x < kw; x++) out[((a * kh + y) * kw + x) * i + b] = src[((a * i + b) * kh + y) * kw + x]!;
  return Tensor.fromF32(out, [o, kh, kw, i]);
}

function quantizable(name: string, t: Tensor): boolean {
  if (t.dtype !== 'F32' || t.shape.length !== 2 || /norm/.test(name) || !name.endsWith('.weight')) return false;
  if (t.shape[1]! % GROUP) return false;
  return name.startsWith('model.language_model.') || name.startsWith('model.embed_vision.') || name.startsWith('model.embed_audio.');
}

export function buildConversions(src: string, out: string): { mlx: string; ref: string } {
  const mlx = join(out, 'mlx'), ref = join(out, 'ref');
  mkdirSync(mlx, { recursive: true });
  mkdirSync(ref, { recursive: true });
  const ck = Checkpoint.open(src);
  const mt: Record<string, Tensor> = {}, rt: Record<string, Tensor> = {};
  for (const name of ck.keys()) {
    const t = ck.get(name);
    if (quantizable(name, t)) {
      const q = QuantizedWeight.quantize(t.toF32(), t.shape, { bits: 4, groupSize: GROUP });
      const base = mlxName(name).slice(0, -'.weight'.length);
      mt[`${base}.weight`] = q.packed;
      mt[`${base}.scales`] = q.scales;
      mt[`${base}.biases`] = q.biases;
      rt[name] = Tensor.fromF32(q.weight.dequantize(), t.shape);
    } else {
      mt[mlxName(name)] = t.shape.length === 4 ? channelsLast(t) : t;
      rt[name] = t;
    }
  }
  writeSafetensors(join(mlx, 'model.safetensors'), mt, { format: 'mlx' });
  writeSafetensors(join(ref, 'model.safetensors'), rt, { format: 'pt' });
  const config = JSON.parse(readFileSync(join(src, 'config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(ref, 'config.json'), JSON.stringify(config));
  const q = { group_size: GROUP, bits: 4, mode: 'affine' };
  delete config.torch_dtype;
  writeFileSync(join(mlx, 'config.json'), JSON.stringify({ ...config, quantization: q, quantization_config: q }));
  for (const d of [mlx, ref]) {
    copyFileSync(join(src, 'preprocessor_config.json'), join(d, 'preprocessor_config.json'));
    copyFileSync(join(src, 'image.png'), join(d, 'image.png'));
  }
  return { mlx, ref };
}
