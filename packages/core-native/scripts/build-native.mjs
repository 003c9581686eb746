// Incremental native build: configure once, then `node-gyp build` (make only recompiles what changed).
// A lock file serialises concurrent builds from parallel tasks so they never write build/ at the same time.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, openSync, closeSync } from 'node:fs';
import { writeCjsTypes } from './cjs-types.mjs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpus } from 'node:os';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const nodeGyp = join(root, 'node_modules', '.bin', 'node-gyp');
const lockPath = join(root, '.build.lock');

function run(args) {
  const r = spawnSync(nodeGyp, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw Object.assign(new Error(`node-gyp ${args[0]} failed`), { exitCode: r.status ?? 1 });
}

async function withLock(fn) {
  for (let i = 0; ; i++) {
    try { closeSync(openSync(lockPath, 'wx')); break; } catch {
      if (i > 1800) { rmSync(lockPath, { force: true }); continue; }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try { fn(); } finally { rmSync(lockPath, { force: true }); }
}

writeCjsTypes();

try {
await withLock(() => {
  if (!existsSync(join(root, 'build', 'Makefile')) && !existsSync(join(root, 'build', 'config.gypi'))) {
    mkdirSync(join(root, 'build'), { recursive: true });
    run(['configure']);
  }
  run(['build', `-j${Math.max(1, Math.min(cpus().length, 4))}`]);
});
} catch (e) {
  console.error(`[core-native] ${e.message}`);
  process.exit(e.exitCode ?? 1);
}
