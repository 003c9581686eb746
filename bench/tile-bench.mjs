// What the tile-layout kernel benches (layouts-ab, shared-gemv) share: the addon, their --flag reader,
// and the refusal to run where the kernels do not read the 16-row tile layout.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
export const native = require('../packages/core-native/lib/index.cjs');

const args = process.argv.slice(2);
/** Whether --name is on the command line. */
export const has = (name) => args.includes(`--${name}`);
/** The value after --name on the command line, or dflt. */
export const flag = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};

/** Exits with a one-line reason unless the running kernels read the tile layout. */
export function requireTileLayout(script, why = '') {
  if (native.weightTileLayout()) return;
  console.error(`${script}: the ${native.cpuInfo().isa} kernels do not read the tile layout${why}`);
  process.exit(1);
}
