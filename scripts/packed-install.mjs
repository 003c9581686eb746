// The packed-install test: what a user gets from the registry, tried before anything is published.
// Packs every workspace package as `pnpm publish` would (prepack included), installs the tarballs into
// fresh temporary apps the way users do, and uses them there:
//
//   1. npm app with every package: `npx mlxcel generate --demo --max-tokens 8`, a one-line startup error,
//      and `tsc --strict` of a small ESM + CJS consumer of the published types
//   2. npm app with only @mlxcel/rope and @mlxcel/cache (and what they depend on): each used alone, from
//      an ES module and from CommonJS
//   3. pnpm 10 app (build scripts blocked, pnpm's default): `mlxcel generate --demo` still works
//
// Installs must compile nothing: the linux-x64 prebuild is packed into @mlxcel/core-native (made from
// the source build by `prebuildify.mjs --from-build`), every install runs with no C/C++ compiler or
// python reachable (CC/CXX/npm_config_python point at a missing file, npm_config_build_from_source=
// false), and afterwards the installed core-native must have no build/ folder. Offline apart from the
// npm registry (the apps' third-party dependencies). Needs the workspace built (`npm test` does that).
//
//   node scripts/packed-install.mjs [--keep] [--prebuilt]
//     --keep      leaves the temp folder for inspection
//     --prebuilt  packs packages/core-native/prebuilds/ as it is (the release workflow's gathered
//                 binaries) instead of making the linux-x64 one from the source build
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');
const usePrebuilt = process.argv.includes('--prebuilt');
const work = mkdtempSync(join(tmpdir(), 'mlxcel-packed-'));
const tarballs = join(work, 'tarballs');
const t0 = Date.now();
const results = [];
const noCompiler = join(work, 'no-compiler-here');

// Installs that would compile would fail loudly with this environment instead of silently building.
const installEnv = {
  ...process.env,
  CC: noCompiler, CXX: noCompiler, LINK: noCompiler,
  npm_config_python: noCompiler, npm_config_build_from_source: 'false',
  npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false',
  MLXCEL_CACHE: join(work, 'mlxcel-cache'),
};

function log(msg) {
  console.log(`[packed-install +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);
}

/** Runs a command; returns its output, or throws with the output when it fails (or `expectFail`). */
function sh(cmd, args, { cwd, env = installEnv, expectFail = false } = {}) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: 300_000 });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const failed = r.status !== 0;
  if (failed !== expectFail)
    throw new Error(`\`${cmd} ${args.join(' ')}\` in ${cwd} ${failed ? `exited ${r.status ?? r.signal}` : 'succeeded but should have failed'}:\n${out.trim()}`);
  return out;
}

/** One named check: passes or records the failure and goes on with the others. */
function check(name, fn) {
  try {
    const detail = fn();
    results.push({ name, ok: true });
    log(`ok   ${name}${detail ? ` (${detail})` : ''}`);
  } catch (e) {
    results.push({ name, ok: false });
    log(`FAIL ${name}\n${e instanceof Error ? e.message : e}`);
  }
}

function writeJson(file, value) {
  writeFileSync(file, JSON.stringify(value, null, 2) + '\n');
}

const pkgs = readdirSync(join(repo, 'packages'))
  .map((d) => join(repo, 'packages', d, 'package.json'))
  .filter((f) => existsSync(f))
  .map((f) => JSON.parse(readFileSync(f, 'utf8')))
  .filter((p) => !p.private);
/** name -> absolute tarball path, filled by the pack step. */
const tgz = {};

function appWith(dir, names) {
  mkdirSync(dir, { recursive: true });
  writeJson(join(dir, 'package.json'), { name: 'consumer', version: '1.0.0', private: true });
  return names.map((n) => tgz[n]);
}

function assertNoSourceBuild(app) {
  const native = join(app, 'node_modules', '@mlxcel', 'core-native');
  if (!existsSync(join(native, 'prebuilds'))) throw new Error(`${native} has no prebuilds/`);
  if (existsSync(join(native, 'build'))) throw new Error(`${native}/build exists: the install compiled the addon`);
}

function assertDemo(out) {
  const m = /generated (\d+) tok/.exec(out);
  if (!m || m[1] !== '8') throw new Error(`expected "generated 8 tok" in the output:\n${out}`);
  return 'generated 8 tok';
}

// -- pack ------------------------------------------------------------------------------------------
check(usePrebuilt ? 'the linux-x64 prebuild is there' : 'prebuild linux-x64 from the source build', () => {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`this test packs the linux-x64 prebuild; this is ${process.platform}-${process.arch}`);
  const prebuilt = join(repo, 'packages/core-native/prebuilds/linux-x64/@mlxcel+core-native.glibc.node');
  if (usePrebuilt && !existsSync(prebuilt)) throw new Error(`--prebuilt, but there is no ${prebuilt}`);
  if (!usePrebuilt) sh(process.execPath, [join(repo, 'packages/core-native/scripts/prebuildify.mjs'), '--from-build'], { cwd: repo, env: process.env });
});

check(`pnpm -r pack (${pkgs.length} packages)`, () => {
  sh('pnpm', ['-r', '--workspace-concurrency=1', 'pack', '--pack-destination', tarballs], { cwd: repo, env: process.env });
  for (const p of pkgs) {
    const file = join(tarballs, `${p.name.replace('@', '').replace('/', '-')}-${p.version}.tgz`);
    if (!existsSync(file)) throw new Error(`no tarball ${file} for ${p.name}`);
    tgz[p.name] = file;
    const listing = sh('tar', ['-tzf', file], { cwd: work });
    for (const need of ['LICENSE', 'README.md', 'package.json'].map((f) => `package/${f}`))
      if (!listing.split('\n').includes(need)) throw new Error(`${p.name}'s tarball lacks ${need}`);
    const stray = listing.split('\n').filter((f) => /^package\/(test|bench|node_modules|build|build-cross|build-prebuild)\//.test(f));
    if (stray.length) throw new Error(`${p.name}'s tarball ships ${stray.slice(0, 3).join(', ')}`);
  }
  const native = sh('tar', ['-tzf', tgz['@mlxcel/core-native']], { cwd: work });
  if (!native.includes('package/prebuilds/linux-x64/@mlxcel+core-native.glibc.node')) throw new Error('core-native tarball has no linux-x64 prebuild');
  return `${Object.keys(tgz).length} tarballs`;
});
if (results.some((r) => !r.ok)) finish();

// -- 1: npm, every package -------------------------------------------------------------------------
const full = join(work, 'npm-app');
check('npm install of every tarball compiles nothing', () => {
  const files = appWith(full, Object.keys(tgz));
  const t = Date.now();
  sh('npm', ['install', '--no-package-lock', ...files], { cwd: full });
  assertNoSourceBuild(full);
  return `${((Date.now() - t) / 1000).toFixed(1)} s`;
});

check('npx mlxcel generate --demo --max-tokens 8', () =>
  assertDemo(sh('npx', ['--no-install', 'mlxcel', 'generate', '--demo', '--max-tokens', '8'], { cwd: full })));

// The prebuilt binary keeps the runtime CPU dispatch: its baseline (scalar) variant and AVX2 run the
// demo too, whatever the CPU's best variant is.
for (const isa of ['scalar', 'avx2'])
  check(`MLXCEL_ISA=${isa}: the prebuilt addon runs that variant, and the demo generates`, () => {
    const env = { ...installEnv, MLXCEL_ISA: isa };
    const active = sh(process.execPath, ['-p', "require('@mlxcel/core-native').cpuInfo().isa"], { cwd: full, env }).trim();
    if (active !== isa) throw new Error(`cpuInfo().isa is ${active}`);
    return assertDemo(sh('npx', ['--no-install', 'mlxcel', 'generate', '--demo', '--max-tokens', '8'], { cwd: full, env }));
  });

check('a missing addon is one line from the CLI, with npm advice', () => {
  // The package's own env override points node-gyp-build at a folder with no binary in it.
  const env = { ...installEnv, '@MLXCEL/CORE_NATIVE_PREBUILD': join(work, 'empty') };
  mkdirSync(join(work, 'empty'), { recursive: true });
  // Run the bin with node itself: a shell between would drop a variable with such a name.
  const bin = join(full, 'node_modules', '@mlxcel', 'cli', 'dist', 'bin.js');
  const out = sh(process.execPath, [bin, 'generate', '--demo'], { cwd: full, env, expectFail: true }).trim();
  if (out.split('\n').length !== 1) throw new Error(`expected one line, got:\n${out}`);
  if (!out.includes('npm rebuild @mlxcel/core-native') || !out.includes('linux-x64 (glibc)')) throw new Error(`advice missing: ${out}`);
});

check('CJS require of @mlxcel/engine: load the demo model and generate', () => {
  writeFileSync(join(full, 'engine.cjs'), [
    "const { ensureDemoModel, loadModel, generate } = require('@mlxcel/engine');",
    '(async () => {',
    '  const model = await loadModel(ensureDemoModel());',
    '  let n = 0;',
    "  for await (const t of generate(model, 'Hello', { maxTokens: 4, seed: 1 })) if (t.token >= 0) n++;",
    "  if (n !== 4) throw new Error(`${n} tokens, expected 4`);",
    "  console.log('tokens', n);",
    '})().catch((e) => { console.error(e); process.exit(1); });',
  ].join('\n'));
  return sh(process.execPath, ['engine.cjs'], { cwd: full }).trim();
});

check('tsc --strict of an ESM and a CJS consumer', () => {
  writeFileSync(join(full, 'consumer.mts'), [
    "import { parseRope, RopeTable, type RopeSpec } from '@mlxcel/rope';",
    "import { ContiguousCache, type AttendOptions } from '@mlxcel/cache';",
    "import { loadModel, generate, type GenerateOptions } from '@mlxcel/engine';",
    "import { startServer } from '@mlxcel/server';",
    "import { Tensor } from '@mlxcel/tensor';",
    "import { cpuInfo, type CpuInfo } from '@mlxcel/core-native';",
    "const spec: RopeSpec = parseRope({ rope_theta: 10000, head_dim: 8, hidden_size: 16, num_attention_heads: 2 });",
    'const table = new RopeTable(spec);',
    'const cache = new ContiguousCache(1, 8);',
    'const opts: AttendOptions = { scale: 1 };',
    'const gen: GenerateOptions = { maxTokens: 4 };',
    'const info: CpuInfo = cpuInfo();',
    'export const used = [table, cache, opts, gen, info.isa, loadModel, generate, startServer, Tensor];',
  ].join('\n'));
  writeFileSync(join(full, 'consumer.cts'), [
    "import rope = require('@mlxcel/rope');",
    "import cache = require('@mlxcel/cache');",
    "import { cpuInfo } from '@mlxcel/core-native';",
    'const spec: rope.RopeSpec = rope.parseRope({ rope_theta: 10000, head_dim: 8 });',
    'export const used = [new rope.RopeTable(spec), new cache.ContiguousCache(1, 8), cpuInfo().isa.length];',
  ].join('\n'));
  writeJson(join(full, 'tsconfig.json'), {
    compilerOptions: {
      strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022',
      // The consumer gets Node's types from the repository rather than installing them.
      typeRoots: [join(repo, 'node_modules', '@types')], types: ['node'],
    },
    files: ['consumer.mts', 'consumer.cts'],
  });
  sh(join(repo, 'node_modules', '.bin', 'tsc'), ['-p', full], { cwd: full });
});

// -- 2: npm, rope and cache alone ------------------------------------------------------------------
const lib = join(work, 'npm-lib');
check('npm install of @mlxcel/rope + @mlxcel/cache (with tensor, core-native) compiles nothing', () => {
  const files = appWith(lib, ['@mlxcel/core-native', '@mlxcel/tensor', '@mlxcel/rope', '@mlxcel/cache']);
  sh('npm', ['install', '--no-package-lock', ...files], { cwd: lib });
  assertNoSourceBuild(lib);
});

// The same checks from both module systems: RoPE of the unit vector e0 at position p is
// (cos p, ..., sin p, ...) (pair 0 has inverse frequency 1), and attention over a single key returns
// that key's value.
const useAlone = (imp) => `
${imp}
const spec = parseRope({ rope_theta: 10000, head_dim: 8, hidden_size: 16, num_attention_heads: 2 });
const x = new Float32Array(8); x[0] = 1;
new RopeTable(spec).apply(x, 1, 1, 8, new Int32Array([3]));
if (Math.abs(x[0] - Math.cos(3)) > 1e-6 || Math.abs(x[4] - Math.sin(3)) > 1e-6) throw new Error('rope: ' + x);
const c = new ContiguousCache(1, 4);
c.update(new Float32Array([1, 0, 0, 0]), new Float32Array([0.5, -2, 3, 7]), 1);
const o = c.attend(new Float32Array([1, 1, 1, 1]), 1, 1, new Int32Array([0]), { scale: 0.5 });
if ([0.5, -2, 3, 7].some((v, i) => Math.abs(o[i] - v) > 1e-6)) throw new Error('cache: ' + o.join());
console.log('ok');
`;
check('ESM import of @mlxcel/rope and @mlxcel/cache', () => {
  writeFileSync(join(lib, 'use.mjs'), useAlone("import { parseRope, RopeTable } from '@mlxcel/rope';\nimport { ContiguousCache } from '@mlxcel/cache';"));
  sh(process.execPath, ['use.mjs'], { cwd: lib });
});
check('CJS require of @mlxcel/rope and @mlxcel/cache', () => {
  writeFileSync(join(lib, 'use.cjs'), useAlone("const { parseRope, RopeTable } = require('@mlxcel/rope');\nconst { ContiguousCache } = require('@mlxcel/cache');"));
  sh(process.execPath, ['use.cjs'], { cwd: lib });
});

// -- 3: pnpm 10, build scripts blocked -------------------------------------------------------------
const pnpmApp = join(work, 'pnpm-app');
check('pnpm 10 install (build scripts blocked) + mlxcel generate --demo', () => {
  mkdirSync(pnpmApp, { recursive: true });
  // The tarballs name each other by version; overrides point those at the local files, as the
  // registry would serve them.
  const files = Object.fromEntries(Object.entries(tgz).map(([n, f]) => [n, `file:${f}`]));
  writeJson(join(pnpmApp, 'package.json'), { name: 'consumer', version: '1.0.0', private: true, dependencies: files, pnpm: { overrides: files } });
  const out = sh('pnpm', ['install', '--prefer-offline', '--config.confirmModulesPurge=false'], { cwd: pnpmApp });
  if (!/Ignored build scripts: .*@mlxcel\/core-native/s.test(out)) throw new Error(`expected pnpm to block core-native's install script:\n${out}`);
  assertNoSourceBuild(pnpmApp);
  return assertDemo(sh('pnpm', ['exec', 'mlxcel', 'generate', '--demo', '--max-tokens', '8'], { cwd: pnpmApp }));
});

check('under pnpm, a missing addon is one line with pnpm approve-builds advice', () => {
  const env = { ...installEnv, '@MLXCEL/CORE_NATIVE_PREBUILD': join(work, 'empty') };
  const bin = join(pnpmApp, 'node_modules', '@mlxcel', 'cli', 'dist', 'bin.js');
  const out = sh(process.execPath, [bin, 'generate', '--demo'], { cwd: pnpmApp, env, expectFail: true }).trim();
  if (out.split('\n').length !== 1) throw new Error(`expected one line, got:\n${out}`);
  if (!out.includes('pnpm approve-builds')) throw new Error(`advice missing: ${out}`);
});

finish();

function finish() {
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  if (keep) log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
  log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`packed-install: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
