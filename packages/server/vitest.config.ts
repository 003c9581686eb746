import { defineConfig } from 'vitest/config';

// Tests spawn real `mlxcel serve` processes: one file at a time keeps the 2-core CI machine unloaded.
export default defineConfig({
  test: { pool: 'forks', fileParallelism: false, include: ['test/**/*.test.ts'], testTimeout: 60_000, hookTimeout: 60_000 },
});
