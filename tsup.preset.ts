// The one tsup set-up every TypeScript package builds with: ESM (`dist/index.js`, `.d.ts`) for
// `import`, and CommonJS (`dist/index.cjs`, `.d.cts`) for `require`, as each package.json's `exports`
// names them. `shims` gives the CJS build a working `import.meta.url` (engine finds its demo assets
// through it). Dependencies stay external, so both formats load the same installed packages.
import type { Options } from 'tsup';

export function libraryBuild(overrides: Options = {}): Options {
  return {
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    shims: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    platform: 'node',
    ...overrides,
  };
}
