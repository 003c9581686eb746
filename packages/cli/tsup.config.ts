import { defineConfig } from 'tsup';
import { libraryBuild } from '../../tsup.preset';

export default defineConfig([
  // The library API (buildProgram, main, runBench, ...) in both formats.
  libraryBuild(),
  // The `mlxcel` command: ESM only (it uses top-level await), kept out of `clean` so it does not
  // delete the library build that runs alongside it.
  libraryBuild({ entry: ['src/bin.ts'], format: ['esm'], dts: false, shims: false, clean: false }),
]);
