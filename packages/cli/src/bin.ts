#!/usr/bin/env node
// main.js is imported dynamically so that an error while loading the native addon (MLXCEL_ISA=bogus,
// MLXCEL_THREADS=0, no build for this platform) is reported as one line, not an uncaught stack trace.
import('./main.js').then(
  ({ main }) => main(process.argv),
  (e: unknown) => {
    const err = e as { message?: string; stack?: string };
    process.stderr.write(`mlxcel: ${err?.message ?? String(e)}\n`);
    if (process.argv.includes('--verbose') && err?.stack) process.stderr.write(`${err.stack}\n`);
    process.exitCode = 1;
  },
);
