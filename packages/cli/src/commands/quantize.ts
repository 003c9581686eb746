/**
 * mlxcel quantize: write an MLX-layout affine 4/8-bit checkpoint from a f32/f16/bf16 one.
 * Follows mlx-lm's conversion rule: every Linear / Embedding / stacked-expert weight (a float
 * `.weight` of rank 2 or 3, or a fused expert tensor) whose last dimension is a multiple of the group
 * size is quantized; norms, biases and everything else stay as they are. Scales and biases are stored
 * in the weight's own dtype, and config.json gets `quantization` and `quantization_config`.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { readJson } from '@mlxcel/engine';
import { Checkpoint, QuantizedWeight, writeSafetensors, type Tensor } from '@mlxcel/tensor';
import { UsageError } from '../errors.js';
import { int } from '../parse.js';
import { info, Progress } from '../ui/output.js';

const COPY = /^(tokenizer.*|generation_config\.json|chat_template\.(jinja|json)|special_tokens_map\.json|.*\.tiktoken|preprocessor_config\.json|processor_config\.json)$/;

/** Whether mlx-lm would quantize this tensor (a Linear/Embedding/expert matrix, not a norm or conv). */
export function isQuantizable(name: string, t: Tensor, group: number): boolean {
  if (!['F32', 'F16', 'BF16'].includes(t.dtype)) return false;
  if (t.shape.length < 2 || t.shape.length > 3) return false;
  if (/norm/i.test(name)) return false;
  if ((t.shape[t.shape.length - 1]! % group) !== 0) return false;
  return name.endsWith('.weight');
}

export function registerQuantize(program: Command): void {
  program
    .command('quantize')
    .description('write an MLX affine-quantized checkpoint (loadable by mlxcel and by MLX tools)')
    .requiredOption('-m, --model <dir>', 'f32/f16/bf16 checkpoint folder')
    .requiredOption('-o, --out <dir>', 'output folder (must not exist or be empty)')
    .option('--bits <n>', 'bits per weight: 2, 3, 4, 5, 6 or 8', int('--bits', 2, 8), 4)
    .option('--group-size <n>', 'group size: 32, 64 or 128', int('--group-size', 32, 128), 64)
    .action((o: { model: string; out: string; bits: number; groupSize: number }) => {
      if (o.bits === 7) throw new UsageError('--bits must be 2, 3, 4, 5, 6 or 8');
      if (![32, 64, 128].includes(o.groupSize)) throw new UsageError('--group-size must be 32, 64 or 128');
      const src = resolve(o.model), out = resolve(o.out);
      if (src === out) throw new UsageError('--out must differ from --model');
      if (existsSync(out) && readdirSync(out).length) throw new UsageError(`--out ${out} exists and is not empty`);
      const config = readJson(join(src, 'config.json'), 'model config');
      if (config.quantization || config.quantization_config)
        throw new UsageError(`${src} is already quantized (config.json has a quantization block)`);
      const ckpt = Checkpoint.open(src);
      const names = ckpt.keys().sort();
      const tensors: Record<string, Tensor> = {};
      const bar = new Progress('quantizing');
      let nq = 0;
      names.forEach((name, i) => {
        const t = ckpt.get(name);
        if (isQuantizable(name, t, o.groupSize)) {
          const sd = t.dtype as 'F32' | 'F16' | 'BF16';
          const q = QuantizedWeight.quantize(t.toF32(), t.shape, { bits: o.bits, groupSize: o.groupSize }, sd);
          const base = name.slice(0, -'.weight'.length);
          tensors[`${base}.weight`] = q.packed;
          tensors[`${base}.scales`] = q.scales;
          tensors[`${base}.biases`] = q.biases;
          nq++;
        } else tensors[name] = t;
        bar.update(i + 1, names.length);
      });
      mkdirSync(out, { recursive: true });
      writeSafetensors(join(out, 'model.safetensors'), tensors, { format: 'mlx' });
      const q = { group_size: o.groupSize, bits: o.bits, mode: 'affine' };
      writeFileSync(join(out, 'config.json'), `${JSON.stringify({ ...config, quantization: q, quantization_config: q }, null, 2)}\n`);
      for (const f of readdirSync(src)) if (COPY.test(f)) copyFileSync(join(src, f), join(out, f));
      info(`quantized ${nq} of ${names.length} tensors to ${o.bits}-bit (group ${o.groupSize}) -> ${out}`);
    });
}
