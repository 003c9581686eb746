// Runs before every test of every package (vitest.shared.ts). Many tests are long synchronous native
// calls; a file of them never reaches the event loop's poll phase between tests, so the worker does not
// see vitest's RPC replies and fails the run with "Timeout calling onTaskUpdate" once 60 s pass (seen on
// AVX2-only CI machines, where the kernels are slower). One macrotask turn before each test lets the
// replies in; it changes nothing a test observes.
import { beforeEach } from 'vitest';

beforeEach(() => new Promise<void>((resolve) => setImmediate(resolve)));
