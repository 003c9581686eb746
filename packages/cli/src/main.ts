/** The mlxcel command line. */
import { Command, CommanderError } from 'commander';
import { registerBench } from './commands/bench.js';
import { registerChat } from './commands/chat.js';
import { registerGenerate } from './commands/generate.js';
import { registerInspect } from './commands/inspect.js';
import { registerQuantize } from './commands/quantize.js';
import { registerTrace } from './commands/trace.js';
import { registerServe } from './commands/serve.js';
import { reportError } from './errors.js';
import { VERSION } from './version.js';

export function buildProgram(): Command {
  const program = new Command()
    .name('mlxcel')
    .description('LLM inference for Node.js: Gemma 3n, Gemma 4, Phi-3/3.5 (mini, MoE, small)')
    .version(VERSION)
    .option('--verbose', 'print stack traces on errors')
    .showHelpAfterError('(run mlxcel --help for usage)')
    .exitOverride();
  registerGenerate(program);
  registerChat(program);
  registerInspect(program);
  registerQuantize(program);
  registerBench(program);
  registerTrace(program);
  registerServe(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const verbose = argv.includes('--verbose');
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander already printed its message (help, version, or a usage error)
      process.exitCode = e.exitCode;
      return;
    }
    process.exitCode = reportError(e, verbose);
  }
}
