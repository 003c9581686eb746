/** Errors a user can cause, reported as one clear line (stack only with --verbose). */
export class UsageError extends Error {
  readonly code = 'USAGE';
}

export function reportError(e: unknown, verbose: boolean): number {
  const err = e as { message?: string; code?: string; stack?: string };
  const msg = err?.message ?? String(e);
  process.stderr.write(`mlxcel: ${msg}\n`);
  if (verbose && err?.stack) process.stderr.write(`${err.stack}\n`);
  else if (!(e instanceof UsageError) && !err?.code) process.stderr.write('(run with --verbose for details)\n');
  return 1;
}
