import { existsSync } from 'node:fs';
import { defineConfig } from 'tsup';

// The worker threads are entries of their own (new Worker(url) loads them from dist/worker/); the
// web UI module is bundled when this build has one (see src/webui-route.ts).
const entry: Record<string, string> = {
  index: 'src/index.ts',
  'worker/engine-worker': 'src/worker/engine-worker.ts',
  'worker/tokenizer-worker': 'src/worker/tokenizer-worker.ts',
};
if (existsSync('src/webui.ts')) entry.webui = 'src/webui.ts';

export default defineConfig({
  entry,
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
});
