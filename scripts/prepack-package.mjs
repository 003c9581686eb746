// `prepack` of every TypeScript package (runs before `pnpm pack` and `pnpm publish`): builds the
// package and what it depends on through turbo, whose cache makes this quick when dist/ is current,
// then checks that every file package.json points at (exports, main, types, bin) exists, so a tarball
// can never ship without its build. A lock serialises the turbo runs of packages packed in parallel.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkgDir = process.cwd();
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const lockPath = join(repo, '.build.lock');

function fail(message) {
  console.error(`[prepack ${pkg.name}] ${message}`);
  process.exit(1);
}

async function withLock(fn) {
  for (let i = 0; ; i++) {
    try {
      closeSync(openSync(lockPath, 'wx'));
      break;
    } catch {
      if (i > 1200) fail(`${lockPath} has been held for 10 minutes; remove it if no build is running`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lockPath, { force: true });
  }
}

/** Every relative file path in a package.json `exports` / `bin` value. */
function targets(value) {
  if (typeof value === 'string') return value.startsWith('./') ? [value] : [];
  if (value && typeof value === 'object') return Object.values(value).flatMap(targets);
  return [];
}

const turbo = join(repo, 'node_modules', '.bin', process.platform === 'win32' ? 'turbo.cmd' : 'turbo');
if (!existsSync(turbo)) fail(`no ${turbo}: run \`pnpm install\` at the repository root first`);
const status = await withLock(
  () => spawnSync(turbo, ['run', 'build', `--filter=${pkg.name}`, '--output-logs=errors-only'], { cwd: repo, stdio: 'inherit', shell: process.platform === 'win32' }).status,
);
if (status !== 0) fail('build failed');

const missing = [...new Set([pkg.main, pkg.types, ...targets(pkg.exports), ...targets(pkg.bin)])]
  .filter((f) => typeof f === 'string' && f !== './package.json')
  .filter((f) => !existsSync(join(pkgDir, f)));
if (missing.length) fail(`the build did not produce ${missing.join(', ')}, which package.json names`);
