/**
 * mlxcel chat: an interactive conversation that keeps the model's cache between turns. Each turn
 * renders the whole conversation, keeps the cached prefix that still matches and feeds only the
 * new tokens (so earlier turns are never recomputed). `/image FILE` attaches an image to the next
 * message (vision models).
 */
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { matmulPrecision } from '@mlxcel/core-native';
import { generate, imagePrompt, overridesForChunk, promptIds, supportsImages, type ChatMessage, type GenerateOptions } from '@mlxcel/engine';
import type { SequenceState } from '@mlxcel/tensor';
import { addMatmulFlag, applyMatmulPrecision } from '../matmul-precision.js';
import { addSamplingFlags, samplingOptions } from '../sampling.js';
import { dim, info } from '../ui/output.js';
import { addWeightMemoryFlag, applyWeightMemory } from '../weight-memory-flag.js';
import { statsLine } from './generate.js';
import { openModel } from './model-arg.js';

type Msg = ChatMessage;

export function registerChat(program: Command): void {
  const cmd = program
    .command('chat')
    .description('interactive chat (type /exit or Ctrl-D to quit, /reset to start over, /image FILE to attach an image)')
    .option('-m, --model <dir|repo>', 'model folder or Hugging Face repo id')
    .option('--demo', 'use the built-in random-weight demo model')
    .option('--system <text>', 'system message')
    .option('--chat-template <file>', 'use this Jinja chat template')
    .option('--no-vision', 'do not load the vision tower (saves its memory; /image is refused)')
    .option('--check-weights', 'scan the checkpoint for NaN/Inf weights at load (reads every tensor once)');
  // The same matmul path and weight placement as `generate` (an interactive chat is where speed shows).
  addWeightMemoryFlag(addMatmulFlag(cmd, 'balanced'));
  addSamplingFlags(cmd).action(async (o: Record<string, unknown>) => {
    applyMatmulPrecision(o);
    applyWeightMemory(o);
    const loaded = await openModel(o as never);
    const base = samplingOptions(o); // after the precision: its KV storage default follows it
    info(dim(`(--matmul ${matmulPrecision()}, --kv-cache ${base.kvCache})`));
    const history: Msg[] = o.system ? [{ role: 'system', content: o.system as string }] : [];
    let state: SequenceState | undefined;
    let fed: number[] = []; // token ids whose KV is in `state`
    let pending: string[] = []; // images attached to the next message
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: Boolean(process.stdin.isTTY) });
    const prompt = () => process.stderr.write(process.stdin.isTTY ? '> ' : '');
    prompt();
    for await (const line of rl) {
      const text = line.trim();
      if (!text) { prompt(); continue; }
      if (text === '/exit' || text === '/quit') break;
      if (text === '/reset') {
        history.splice(o.system ? 1 : 0);
        state = undefined;
        fed = [];
        pending = [];
        info(dim('(conversation reset)'));
        prompt();
        continue;
      }
      if (text.startsWith('/image')) {
        const file = text.slice('/image'.length).trim();
        if (!supportsImages(loaded)) info(dim(loaded.noVision ? '(the vision tower was not loaded: --no-vision)' : '(this model has no vision tower)'));
        else if (!file || !existsSync(file)) info(dim(`(no such image file: ${file || '(none given)'})`));
        else {
          pending.push(file);
          info(dim(`(image attached to your next message: ${file})`));
        }
        prompt();
        continue;
      }
      history.push({ role: 'user', content: pending.length ? [...pending.map((path) => ({ type: 'image' as const, path })), { type: 'text' as const, text }] : text });
      pending = [];
      // With images: encode them (cached per file), expand their placeholders and splice the soft tokens.
      let mm: Pick<GenerateOptions, 'embeddingOverrides' | 'atomicSpans' | 'decodeEmbedding'> = {};
      let ip: Awaited<ReturnType<typeof imagePrompt>> | null = null;
      try {
        ip = history.some((m) => Array.isArray(m.content)) ? await imagePrompt(loaded, history) : null;
      } catch (e) {
        history.pop();
        info(dim(`(${(e as Error).message})`));
        prompt();
        continue;
      }
      const all = ip ? Array.from(ip.ids) : Array.from(promptIds(loaded, history));
      let common = 0;
      while (common < fed.length && common < all.length && fed[common] === all[common]) common++;
      if (common === all.length) common--; // always feed at least one token
      if (state && common < state.offset) {
        try {
          state.trim(state.offset - common);
        } catch {
          // Some KV storages (quantized) cannot drop finalized rows: re-encode the conversation instead.
          info(dim('(re-encoding the conversation: this KV storage cannot be trimmed)'));
          state = undefined;
          common = 0;
        }
      }
      if (ip) {
        mm = {
          embeddingOverrides: overridesForChunk(ip.overrides, common, all.length - common),
          atomicSpans: ip.spans.filter((sp) => sp.end > common).map((sp) => ({ start: Math.max(0, sp.start - common), end: sp.end - common })),
          decodeEmbedding: ip.decodeEmbedding,
        };
      }
      const gen = generate(loaded, all.slice(common), { ...base, state, ...mm });
      let reply = '';
      const out: number[] = [];
      for await (const t of gen) {
        if (t.token >= 0) out.push(t.token);
        reply += t.text;
        process.stdout.write(t.text);
      }
      process.stdout.write('\n');
      const stats = await gen.stats;
      state = gen.state;
      // The last sampled token was never fed back, so the cache holds prompt + all but the last token.
      fed = [...all, ...out.slice(0, -1)];
      history.push({ role: 'assistant', content: reply });
      info(dim(statsLine(stats)));
      prompt();
    }
    rl.close();
  });
}
