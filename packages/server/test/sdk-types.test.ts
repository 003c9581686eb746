/** Runs the compile-time check of test/types/sdk-types.ts: server response shapes vs the openai SDK's types. */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

it('tsc --strict accepts the server responses as the openai SDK types', () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const project = fileURLToPath(new URL('./types/tsconfig.json', import.meta.url));
  let out = '';
  try {
    execFileSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8' });
  } catch (e) {
    out = `${(e as { stdout?: string }).stdout ?? ''}${(e as Error).message}`;
  }
  expect(out).toBe('');
});
