// The package's two entries and its startup error: `require` (lib/index.cjs) and `import`
// (lib/index.js) give the same loaded addon, and with no addon for the system the import fails with
// one line that says what to run here, in this repository.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as esm from '../lib/index.js';

const require = createRequire(import.meta.url);
const lib = fileURLToPath(new URL('../lib/', import.meta.url));

/** Loads an entry in a child Node with node-gyp-build pointed at an empty folder (no addon there). */
function loadWithoutAddon(code: string) {
  const empty = mkdtempSync(join(tmpdir(), 'mlxcel-no-addon-'));
  return spawnSync(process.execPath, ['-e', code], {
    env: { ...process.env, '@MLXCEL/CORE_NATIVE_PREBUILD': empty },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('entries', () => {
  it('require() and import give the same addon object, with the op codes', () => {
    const cjs = require('../lib/index.cjs');
    expect(cjs.matmul).toBe(esm.matmul);
    expect(cjs.default).toBe(esm.default);
    expect(cjs.DType).toEqual(esm.DType);
    expect(cjs.UnaryOp.SILU).toBe(0);
    for (const name of Object.keys(esm)) expect(cjs[name], name).toBeDefined();
  });
});

describe('no addon for the system', () => {
  for (const [entry, code] of [
    ['import', `import(${JSON.stringify(join(lib, 'index.js'))}).catch((e) => { console.log(JSON.stringify({ code: e.code, message: e.message })); })`],
    ['require', `try { require(${JSON.stringify(join(lib, 'index.cjs'))}) } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`],
  ])
    it(`${entry} fails with MLXCEL_NATIVE_MISSING: one line with this repository's build command`, () => {
      const r = loadWithoutAddon(code);
      expect(r.stderr).toBe(''); // caught: nothing uncaught printed a stack
      const { code: errCode, message } = JSON.parse(r.stdout);
      expect(errCode).toBe('MLXCEL_NATIVE_MISSING');
      expect(message).not.toContain('\n');
      expect(message).toContain(`no native addon for this system (${process.platform}-${process.arch}`);
      expect(message).toContain('pnpm --filter @mlxcel/core-native build');
    });
});
