import { existsSync } from 'node:fs';
import { defineConfig } from 'tsup';
import { libraryBuild } from '../../tsup.preset';

// The worker threads are entries of their own (new Worker(url) loads them from dist/worker/); the
// web UI module is bundled when this build has one (see src/webui-route.ts).
const entry: Record<string, string> = { index: 'src/index.ts' };
if (existsSync('src/webui.ts')) entry.webui = 'src/webui.ts';
// The workers use top-level await, which has no CommonJS form: they are built as ESM only (a Worker
// loads them by URL, never through require).
const workers = {
  'worker/engine-worker': 'src/worker/engine-worker.ts',
  'worker/tokenizer-worker': 'src/worker/tokenizer-worker.ts',
};

export default defineConfig([
  libraryBuild({ entry, dts: { entry: 'src/index.ts' }, clean: false }),
  libraryBuild({ entry: workers, format: ['esm'], dts: false, clean: false }),
]);
