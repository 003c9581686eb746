/** mlxcel generate: one prompt in, streamed text out (or one JSON object with --json). */
import { readRegularFile } from '@mlxcel/tensor';
import type { Command } from 'commander';
import { audioPrompt, generate, type GenerateOptions, type GenerationStats } from '@mlxcel/engine';
import { UsageError } from '../errors.js';
import { collect, int } from '../parse.js';
import { addSamplingFlags, samplingOptions } from '../sampling.js';
import { dim, formatBytes, info } from '../ui/output.js';
import { openModel } from './model-arg.js';
import { addMatmulFlag, applyMatmulPrecision } from '../matmul-precision.js';
import { addWeightMemoryFlag, applyWeightMemory } from '../weight-memory-flag.js';

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
    .option('--check-weights', 'scan the checkpoint for NaN/Inf weights at load (reads every tensor once)')
    .option('--no-chat-template', 'send the prompt as raw text (no chat template)')
    .option('--audio <file>', 'WAV file for audio-capable models (Gemma 3n / Gemma 4)')
    .option('--json-schema <file>', 'constrain the output to JSON valid against this JSON Schema file')
    .option('--grammar <file>', 'constrain the output to this GBNF grammar file (llama.cpp syntax)')
    .option('--image <file>', 'image for vision models (Gemma 3n / Gemma 4); repeatable, in prompt order', collect, [])
    .option('--max-soft-tokens <n>', 'Gemma 4: soft-token budget per image (70, 140, 280, 560, 1120)', int('--max-soft-tokens', 1))
    .option('--no-vision', 'do not load the vision tower (saves its memory; image input is refused)')
    .option('--json', 'print one JSON object (text, token ids, stats) instead of streaming');
  addMatmulFlag(cmd, 'balanced');
  addWeightMemoryFlag(cmd);
  addSamplingFlags(cmd).action(async (o: Record<string, unknown>) => {
    applyMatmulPrecision(o);
    applyWeightMemory(o);
    const demo = Boolean(o.demo && !o.model);
    // The random-weight demo prints meaningless text: keep it short unless asked otherwise.
    if (demo && o.maxTokens === undefined) o.maxTokens = 48;
    let prompt = o.prompt as string | undefined;
    if (prompt === undefined && o.promptFile) prompt = readRegularFile(o.promptFile as string, '--prompt-file', 'utf8');
    if (prompt === undefined && !process.stdin.isTTY) prompt = await readStdin();
    if (prompt === undefined || prompt.trim() === '') {
      if (demo) prompt = 'Write a haiku about fast inference.';
      else throw new UsageError('no prompt: pass --prompt, --prompt-file or pipe text on stdin');
    }
    const constraint = constraintFlags(o);
    const loaded = await openModel(o as never);
    const opts = { ...samplingOptions(o), system: o.system as string | undefined, noChatTemplate: o.chatTemplate === false };
    let input: Parameters<typeof generate>[1] = prompt;
    let overrides;
    const images = o.image as string[];
    if (o.audio && images.length) throw new UsageError('pass either --audio or --image, not both');
    if (images.length && o.chatTemplate === false) throw new UsageError('--image needs the chat template (it places the image placeholders)');
    if (o.audio) ({ ids: input, overrides } = audioPrompt(loaded, o.audio as string, prompt, { system: opts.system }));
    // Image parts first, then the text, in one user turn (generate() encodes the images).
    if (images.length) input = [{ role: 'user', content: [...images.map((path) => ({ type: 'image' as const, path })), { type: 'text' as const, text: prompt }] }];
    const gen = generate(loaded, input, { ...opts, ...constraint, embeddingOverrides: overrides, image: { maxSoftTokens: o.maxSoftTokens as number | undefined } });
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

/** --json-schema FILE | --grammar FILE → the engine's responseFormat / grammar (read before the model loads). */
export function constraintFlags(o: Record<string, unknown>): Pick<GenerateOptions, 'responseFormat' | 'grammar'> {
  if (o.jsonSchema && o.grammar) throw new UsageError('give either --json-schema or --grammar, not both');
  const read = (flag: string, file: string): string => {
    try {
      return readRegularFile(file, flag, 'utf8');
    } catch (e) {
      // readRegularFile says why (missing, a directory or FIFO, unreadable): pass its words on.
      throw new UsageError((e as Error).message);
    }
  };
  if (o.jsonSchema) {
    const file = o.jsonSchema as string;
    let schema: unknown;
    try {
      schema = JSON.parse(read('--json-schema', file));
    } catch (e) {
      if (e instanceof UsageError) throw e;
      throw new UsageError(`--json-schema: ${file} is not valid JSON (${(e as Error).message})`);
    }
    return { responseFormat: { type: 'json_schema', schema } };
  }
  if (o.grammar) return { grammar: read('--grammar', o.grammar as string) };
  return {};
}
