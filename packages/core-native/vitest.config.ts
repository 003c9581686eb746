import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

export default defineConfig({
  // MLXCEL_FAST_GEMM=int16: on CPUs where "fast" GEMMs take the exact kernel (Zen 1, see the README's
  // "Matmul precision") the integer GEMM's own conformance tests still run it; test/env.test.ts checks
  // the default in child processes without the variable.
  test: { ...sharedTestConfig, testTimeout: 120_000, env: { MLXCEL_FAST_GEMM: 'int16' } },
});
