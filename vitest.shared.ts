// Test settings every package's vitest.config.ts starts from.
import { fileURLToPath } from 'node:url';

export const sharedTestConfig = {
  // Native kernels run on their own threads; forks keep one crashed addon from taking the run down.
  pool: 'forks' as const,
  include: ['test/**/*.test.ts'],
  testTimeout: 60_000,
  setupFiles: [fileURLToPath(new URL('./scripts/vitest-yield.ts', import.meta.url))],
};
