import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// Tests spawn real `mlxcel serve` processes: one file at a time keeps the 2-core CI machine unloaded.
export default defineConfig({
  test: { ...sharedTestConfig, fileParallelism: false, hookTimeout: 60_000 },
});
