/** mlxcel generate: one prompt in, streamed text out (or one JSON object with --json). */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { audioPrompt, generate, type GenerationStats } from '@mlxcel/engine';
import { UsageError } from '../errors.js';
import { addSamplingFlags, samplingOptions } from '../sampling.js';
import { dim, formatBytes, info } from '../ui/output.js';
import { openModel } from './model-arg.js';
import { addMatmulFlag, applyMatmulPrecision } from '../matmul-precision.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function statsLine(s: GenerationStats): string {
  return (
    `prompt ${s.promptTokens} tok @ ${s.prefillTokensPerSec.toFixed(1)} tok/s | ` +
    `generated ${s.generatedTokens} tok @ ${s.decodeTokensPerSec.toFixed(1)} tok/s | ` +
    `TTFT ${s.timeToFirstTokenMs.toFixed(0)} ms | peak RSS ${formatBytes(s.peakRssBytes)} | finish: ${s.finishReason}`
  );
}

export function registerGenerate(program: Command): void {
  const cmd = program
    .command('generate')
    .description('generate text from a prompt')
    .option('-m, --model <dir|repo>', 'model folder or Hugging Face repo id (org/name[@revision])')
    .option('--demo', 'use the built-in random-weight demo model')
    .option('-p, --prompt <text>', 'the prompt (default: read stdin)')
    .option('--prompt-file <file>', 'read the prompt from a file')
    .option('--system <text>', 'system message')
    .option('--chat-template <file>', 'use this Jinja chat template')
    .option('--no-chat-template', 'send the prompt as raw text (no chat template)')
    .option('--audio <file>', 'WAV file for audio-capable models (Gemma 3n / Gemma 4)')
    .option('--json', 'print one JSON object (text, token ids, stats) instead of streaming');
  addMatmulFlag(cmd, 'fast');
  addSamplingFlags(cmd).action(async (o: Record<string, unknown>) => {
    applyMatmulPrecision(o);
    const demo = Boolean(o.demo && !o.model);
    // The random-weight demo prints meaningless text: keep it short unless asked otherwise.
    if (demo && o.maxTokens === undefined) o.maxTokens = 48;
    let prompt = o.prompt as string | undefined;
    if (prompt === undefined && o.promptFile) prompt = readFileSync(o.promptFile as string, 'utf8');
    if (prompt === undefined && !process.stdin.isTTY) prompt = await readStdin();
    if (prompt === undefined || prompt.trim() === '') {
      if (demo) prompt = 'Write a haiku about fast inference.';
      else throw new UsageError('no prompt: pass --prompt, --prompt-file or pipe text on stdin');
    }
    const loaded = await openModel(o as never);
    const opts = { ...samplingOptions(o), system: o.system as string | undefined, noChatTemplate: o.chatTemplate === false };
    let input: Parameters<typeof generate>[1] = prompt;
    let overrides;
    if (o.audio) ({ ids: input, overrides } = audioPrompt(loaded, o.audio as string, prompt, { system: opts.system }));
    const gen = generate(loaded, input, { ...opts, embeddingOverrides: overrides });
    const tokens: number[] = [];
    let text = '';
    for await (const t of gen) {
      if (t.token >= 0) tokens.push(t.token);
      text += t.text;
      if (!o.json && t.text) process.stdout.write(t.text);
    }
    const stats = await gen.stats;
    if (o.json) process.stdout.write(`${JSON.stringify({ model: loaded.dir, text, tokens, stats })}\n`);
    else {
      process.stdout.write('\n');
      info(dim(statsLine(stats)));
    }
  });
}
