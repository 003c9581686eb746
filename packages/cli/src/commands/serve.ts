/** mlxcel serve: the OpenAI-compatible server from @mlxcel/server, with graceful shutdown on SIGTERM / SIGINT. */
import { statSync } from 'node:fs';
import type { Command } from 'commander';
import { ensureDemoModel } from '@mlxcel/engine';
import { startServer, type DownloadProgress } from '@mlxcel/server';
import { UsageError } from '../errors.js';
import { int, mebibytes, num } from '../parse.js';
import { KV_CACHE_HELP, kvCacheFlag, kvCacheFor } from '../kv-cache-flag.js';
import { info, Progress, yellow } from '../ui/output.js';
import { addMatmulFlag, applyMatmulPrecision } from '../matmul-precision.js';
import { addWeightMemoryFlag, applyWeightMemory } from '../weight-memory-flag.js';

const list = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);

/** --allow-local-files DIR must name an existing folder. */
function localFilesDir(dir: string): string {
  let st;
  try {
    st = statSync(dir);
  } catch {
    throw new UsageError(`--allow-local-files: ${dir} does not exist`);
  }
  if (!st.isDirectory()) throw new UsageError(`--allow-local-files: ${dir} is not a folder`);
  return dir;
}

export function registerServe(program: Command): void {
  const cmd = program
    .command('serve')
    .description('serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions, /v1/completions, /v1/models, /health, /metrics)')
    .option('-m, --model <dir|repo>', 'model folder or Hugging Face repo id')
    .option('--demo', 'serve the built-in random-weight demo model')
    .option('--host <host>', 'listen address', '127.0.0.1')
    .option('--port <n>', 'port (0 = any free port)', int('--port', 0, 65535), 8080)
    .option('--model-name <name[,alias...]>', 'name the API reports and requests must use; more comma-separated names are accepted as aliases (default: the repo id or folder name)')
    .option('--max-batch <n>', 'requests decoded together (continuous batching); 1 = one at a time', int('--max-batch', 1, 256), 8)
    .option('--max-queue <n>', 'sequences that may wait for a batch slot; beyond that requests get 429 with Retry-After', int('--max-queue', 0, 1_000_000), 64)
    .option('--request-timeout <s>', 'seconds a request may take from arrival to its last token (0 = no limit); streams then end with finish_reason "length" and an error event, others get 504', num('--request-timeout', 0), 0)
    .option('--shutdown-grace <s>', 'on SIGTERM/SIGINT: seconds in-flight requests get to finish before their streams are ended', num('--shutdown-grace', 0), 30)
    .option('--api-key <key>', 'require "Authorization: Bearer <key>" on /v1/* and /metrics (default: $MLXCEL_API_KEY)')
    .option('--cors <origins>', 'allow these comma-separated browser origins ("*" = any)')
    .option('--log-prompts', 'include prompts in the request log lines (off by default: prompts can be private)')
    .option('--log-level <level>', 'pino log level: fatal, error, warn, info, debug, trace, silent', 'info')
    .option('--no-webui', 'do not serve the chat web page on GET /')
    .option('--chat-template <file>', 'use this Jinja chat template instead of the model\'s')
    .option('--kv-cache <kind>', KV_CACHE_HELP, kvCacheFlag)
    .option('--max-body-bytes <n>', 'largest request body', int('--max-body-bytes', 1024), 16 * 1024 * 1024)
    .option('--allow-local-files <dir>', 'let image_url parts name files (a path or file: URL) inside this folder; regular files only, symlinks must stay inside (default: data: URLs only; remote URLs are never fetched)')
    .option('--kv-budget <MiB>', 'KV memory for the running sequences and the prefix cache together; a request waits until its KV need (prompt + max_tokens) fits (default: half the available memory)', mebibytes('--kv-budget'))
    .option('--no-prefix-cache', 'do not reuse the KV of prompt prefixes across requests (by default a prompt that starts like an earlier one prefills only the rest)');
  addWeightMemoryFlag(addMatmulFlag(cmd, 'balanced'))
    .action(async (o: Record<string, unknown>) => {
      applyMatmulPrecision(o);
      applyWeightMemory(o);
      let model = o.model as string | undefined;
      if (!model) {
        if (!o.demo) throw new UsageError('--model is required (a model folder or a Hugging Face repo id such as mlx-community/gemma-3n-E2B-it-4bit), or pass --demo');
        model = ensureDemoModel();
        info(yellow('mlxcel demo: a tiny Phi-3-architecture model with RANDOM weights; its text is meaningless by design.'));
      }
      const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
      if (!levels.includes(o.logLevel as string)) throw new UsageError(`--log-level must be one of ${levels.join(', ')}, got "${String(o.logLevel)}"`);
      const names = o.modelName ? list(o.modelName as string) : [];
      const bars = new Map<string, Progress>();
      const server = await startServer({
        model,
        host: o.host as string,
        port: o.port as number,
        modelName: names[0],
        aliases: names.slice(1),
        maxBatch: o.maxBatch as number,
        maxQueue: o.maxQueue as number,
        requestTimeout: o.requestTimeout as number,
        apiKey: (o.apiKey as string | undefined) ?? (process.env.MLXCEL_API_KEY || undefined),
        cors: o.cors ? list(o.cors as string) : undefined,
        logPrompts: Boolean(o.logPrompts),
        logger: { level: o.logLevel as string },
        maxBodyBytes: o.maxBodyBytes as number,
        webui: o.webui !== false,
        chatTemplateFile: o.chatTemplate as string | undefined,
        kvCache: kvCacheFor(o.kvCache),
        allowLocalFiles: o.allowLocalFiles === undefined ? undefined : localFilesDir(o.allowLocalFiles as string),
        kvBudgetMiB: o.kvBudget as number | undefined,
        prefixCache: o.prefixCache !== false,
        onProgress: (p: DownloadProgress) => {
          let bar = bars.get(p.file);
          if (!bar) bars.set(p.file, (bar = new Progress(`downloading ${p.file}`)));
          const total = p.total ?? p.downloaded;
          bar.update(p.done ? total : p.downloaded, total);
        },
      });
      const url = `http://${server.host.includes(':') ? `[${server.host}]` : server.host}:${server.port}`;
      info(`mlxcel listening on ${url} (loading the model; /health answers 503 until it is ready)`);

      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) {
          info(`${signal} again: exiting now`);
          process.exit(1);
        }
        stopping = true;
        info(`${signal}: draining (in-flight requests get ${o.shutdownGrace as number}s to finish)`);
        server.close(o.shutdownGrace as number).then(() => process.exit(0), () => process.exit(1));
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));

      try {
        await server.ready;
      } catch (e) {
        await server.close(0).catch(() => undefined);
        throw e;
      }
      info(`mlxcel serving ${server.modelName} on ${url}/v1 (up to ${o.maxBatch as number} requests decoded together)`);
    });
}
