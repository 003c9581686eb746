import { defineConfig } from 'tsup';
import { libraryBuild } from '../../tsup.preset';

// The library API (buildProgram, main, runBench, ...) and the `mlxcel` command (bin.js, which
// package.json's `bin` names; the ESM build shares one chunk between the two).
export default defineConfig(libraryBuild({ entry: ['src/index.ts', 'src/bin.ts'], dts: { entry: 'src/index.ts' } }));
