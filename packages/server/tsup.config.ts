import { existsSync } from 'node:fs';
import { defineConfig } from 'tsup';
import { libraryBuild } from '../../tsup.preset';

// The worker threads are entries of their own (new Worker(url) loads them from dist/worker/, as ES
// modules from either entry of the package; the engine worker uses top-level await, so they are not
// built as CommonJS); the web UI module is bundled when this build has one (see src/webui-route.ts).
// The two builds run side by side, so each cleans only its own kind of file.
const entry: Record<string, string> = {
  index: 'src/index.ts',
  'worker/engine-worker': 'src/worker/engine-worker.ts',
  'worker/tokenizer-worker': 'src/worker/tokenizer-worker.ts',
};
if (existsSync('src/webui.ts')) entry.webui = 'src/webui.ts';

export default defineConfig([
  libraryBuild({ entry, format: ['esm'], dts: { entry: 'src/index.ts' }, clean: ['**/*.js', '**/*.js.map', '**/*.d.ts'] }),
  libraryBuild({ format: ['cjs'], clean: ['**/*.cjs', '**/*.cjs.map', '**/*.d.cts'] }),
]);
