import { existsSync } from 'node:fs';
import { defineConfig } from 'tsup';
import { libraryBuild } from '../../tsup.preset';

// The library (ESM + CJS, see the preset) and, when this build has one, the web UI module
// (src/webui-route.ts imports it by a computed specifier).
const entry: Record<string, string> = { index: 'src/index.ts' };
if (existsSync('src/webui.ts')) entry.webui = 'src/webui.ts';

// The worker threads are ESM entries of their own: new Worker(url) loads them from dist/worker/
// whichever format loaded the library, and they use top-level await, which CJS cannot express.
// Both builds run in parallel, so neither cleans dist/ (the other's output would be deleted).
export default defineConfig([
  libraryBuild({ entry, dts: { entry: 'src/index.ts' }, clean: false }),
  {
    entry: { 'worker/engine-worker': 'src/worker/engine-worker.ts', 'worker/tokenizer-worker': 'src/worker/tokenizer-worker.ts' },
    format: ['esm'],
    dts: false,
    sourcemap: true,
    clean: false,
    target: 'node20',
    platform: 'node',
  },
]);
