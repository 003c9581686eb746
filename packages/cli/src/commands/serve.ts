/** mlxcel serve: the OpenAI-compatible server from @mlxcel/server. */
import type { Command } from 'commander';
import { startServer } from '@mlxcel/server';
import { int } from '../parse.js';
import { info } from '../ui/output.js';
import { openModel } from './model-arg.js';
import { addMatmulFlag, applyMatmulPrecision } from '../matmul-precision.js';

export function registerServe(program: Command): void {
  const cmd = program
    .command('serve')
    .description('serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions, /v1/completions, /v1/models)')
    .option('-m, --model <dir|repo>', 'model folder or Hugging Face repo id')
    .option('--demo', 'serve the built-in random-weight demo model')
    .option('--host <host>', 'listen address', '127.0.0.1')
    .option('--port <n>', 'port', int('--port', 0, 65535), 8080)
    .option('--max-batch <n>', 'requests decoded together (continuous batching); 1 = one at a time', int('--max-batch', 1, 256), 8);
  addMatmulFlag(cmd, 'fast')
    .action(async (o: Record<string, unknown>) => {
      applyMatmulPrecision(o);
      const loaded = await openModel(o as never);
      const server = await startServer(loaded, { host: o.host as string, port: o.port as number, maxBatch: o.maxBatch as number });
      info(`mlxcel serving ${loaded.dir} on http://${server.host}:${server.port}/v1 (up to ${o.maxBatch as number} requests decoded together)`);
    });
}
