/** mlxcel inspect: architecture, parameters, quantization and estimated memory for a context. */
import type { Command } from 'commander';
import { visionInfo } from '@mlxcel/engine';
import { formatBytes } from '../ui/output.js';
import { int } from '../parse.js';
import { openModel } from './model-arg.js';

function kvBytesPerToken(config: Record<string, unknown>): { bytes: number; note: string } {
  const c = (config.text_config ?? config) as Record<string, number | undefined>;
  const layers = c.num_hidden_layers ?? 0;
  const heads = c.num_attention_heads ?? 1;
  const kv = c.num_key_value_heads ?? heads;
  const hd = c.head_dim ?? (c.hidden_size ?? 0) / heads;
  const shared = c.num_kv_shared_layers ?? 0;
  const bytes = (layers - shared) * 2 * kv * hd * 4;
  return { bytes, note: 'f32 KV, every non-shared layer caching the full context (sliding-window layers use less)' };
}

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('show architecture, parameter count, quantization and memory estimate')
    .option('-m, --model <dir|repo>', 'model folder or Hugging Face repo id')
    .option('--demo', 'inspect the built-in demo model')
    .option('--context <n>', 'context length for the memory estimate', int('--context', 1), 4096)
    .option('--json', 'machine-readable output')
    .option('--no-vision', 'count the model without its vision tower (as `generate --no-vision` loads it)')
    .action(async (o: Record<string, unknown>) => {
      const loaded = await openModel(o as never);
      const m = loaded.model;
      const cfg = loaded.config;
      const q = (cfg.quantization ?? cfg.quantization_config ?? null) as Record<string, unknown> | null;
      const kv = kvBytesPerToken(cfg);
      const ctx = o.context as number;
      const vision = visionInfo(loaded);
      const visionBytes = vision && !vision.disabled ? vision.bytes : 0;
      const report = {
        dir: loaded.dir,
        modelType: m.modelType,
        architectures: cfg.architectures ?? null,
        layers: m.numLayers,
        hiddenSize: m.hiddenSize,
        vocabSize: m.vocabSize,
        maxContext: m.maxContext,
        parameters: m.stats.parameters,
        weightBytes: m.stats.weightBytes,
        quantization: q ? { bits: q.bits, groupSize: q.group_size, mode: q.mode ?? 'affine' } : null,
        tokenizer: loaded.tokenizer ? loaded.tokenizer.kind : null,
        chatTemplate: loaded.chatTemplate !== null,
        eosIds: loaded.eosIds,
        context: ctx,
        kvCacheBytes: kv.bytes * ctx,
        vision,
        estimatedMemoryBytes: m.stats.weightBytes + visionBytes + kv.bytes * ctx,
        kvNote: kv.note,
      };
      if (o.json) {
        process.stdout.write(`${JSON.stringify(report)}\n`);
        return;
      }
      const lines = [
        `model        ${report.dir}`,
        `architecture ${report.modelType} (${Array.isArray(report.architectures) ? report.architectures.join(', ') : '-'})`,
        `layers       ${report.layers}, hidden ${report.hiddenSize}, vocab ${report.vocabSize}, max context ${report.maxContext}`,
        `parameters   ${(report.parameters / 1e6).toFixed(2)} M`,
        `weights      ${formatBytes(report.weightBytes)}${q ? ` (${q.bits}-bit, group ${q.group_size})` : ''}`,
        `tokenizer    ${report.tokenizer ?? 'none'}${report.chatTemplate ? ', chat template' : ''}`,
        `vision       ${vision ? `${vision.tower}: ${(vision.parameters / 1e6).toFixed(2)} M parameters, ${formatBytes(vision.bytes)}${vision.disabled ? ' (not loaded: --no-vision)' : ''}` : 'none'}`,
        `memory @ ${ctx} tokens: ${formatBytes(report.estimatedMemoryBytes)} (text weights${visionBytes ? ` + ${formatBytes(visionBytes)} vision tower` : ''} + ${formatBytes(report.kvCacheBytes)} KV; ${kv.note})`,
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
