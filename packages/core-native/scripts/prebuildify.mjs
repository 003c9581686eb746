// Builds the prebuilt binary that the package ships for one platform: prebuilds/<platform>-<arch>/
// @mlxcel+core-native.<libc>.node (N-API, so one file serves Node 20, 22 and 24; node-gyp-build picks
// it at load). It runs prebuildify (`node-gyp rebuild --release`, then strip) in a staging folder
// build-prebuild/<platform>-<arch>-<libc>/, so the source build in build/ is left alone.
//
//   node scripts/prebuildify.mjs                 this machine's platform and arch
//   node scripts/prebuildify.mjs --arch arm64    linux-arm64 from an x64 Linux host with the Debian /
//                                                Ubuntu cross compiler (g++-aarch64-linux-gnu)
//   node scripts/prebuildify.mjs --from-build    package build/Release/mlxcel_core.node (the source
//                                                build: same binding.gyp and flags) instead of
//                                                compiling again; the packed-install test uses this
//
// Afterwards it checks the binary: for this machine's arch it loads it in a child Node and prints the
// kernel variants; for a cross build it checks the ELF machine field. Environment: JOBS (parallel
// compiles, default 2), CROSS_PREFIX (default aarch64-linux-gnu-), and node-gyp's usual variables
// (npm_config_nodedir to use local Node headers).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, openSync, readSync, closeSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch as hostArch, platform } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: { arch: { type: 'string' }, libc: { type: 'string' }, 'from-build': { type: 'boolean' } },
});

function die(message) {
  console.error(`[prebuildify] ${message}`);
  process.exit(1);
}

const arch = opts.arch ?? hostArch();
const libc = opts.libc ?? (platform() === 'linux' ? (existsSync('/etc/alpine-release') ? 'musl' : 'glibc') : '');
const cross = arch !== hostArch();
if (cross && !(platform() === 'linux' && hostArch() === 'x64' && arch === 'arm64'))
  die(`cross builds are set up for linux x64 -> arm64 only, not ${platform()} ${hostArch()} -> ${arch}`);
const tuple = `${platform()}-${arch}`;
const name = `@mlxcel+core-native${libc ? `.${libc}` : ''}.node`;
const outDir = join(root, 'prebuilds', tuple);
const outFile = join(outDir, name);
const crossPrefix = process.env.CROSS_PREFIX ?? 'aarch64-linux-gnu-';

function run(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0) die(`${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
}

if (opts['from-build']) {
  if (cross) die('--from-build packages this machine\'s own build; it cannot be combined with --arch');
  const built = join(root, 'build', 'Release', 'mlxcel_core.node');
  if (!existsSync(built)) die(`no ${relative(root, built)}: run \`pnpm --filter @mlxcel/core-native build\` first`);
  mkdirSync(outDir, { recursive: true });
  copyFileSync(built, outFile);
  if (platform() === 'linux') run('strip', ['--strip-all', outFile]);
  else if (platform() === 'darwin') run('strip', ['-Sx', outFile]);
} else {
  const stage = join(root, 'build-prebuild', `${tuple}${libc ? `-${libc}` : ''}`);
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  for (const f of ['binding.gyp', 'package.json']) copyFileSync(join(root, f), join(stage, f));
  // node-gyp reads the sources and node-addon-api's headers relative to the staging folder.
  symlinkSync(join(root, 'src'), join(stage, 'src'), 'junction');
  symlinkSync(join(root, 'node_modules'), join(stage, 'node_modules'), 'junction');
  const env = { ...process.env, JOBS: process.env.JOBS ?? '2' };
  if (libc) env.PREBUILD_LIBC = libc;
  if (cross) {
    for (const tool of ['gcc', 'g++', 'strip']) {
      if (spawnSync('sh', ['-c', `command -v ${crossPrefix}${tool}`]).status !== 0)
        die(`no ${crossPrefix}${tool} on PATH (Debian/Ubuntu: apt-get install g++-aarch64-linux-gnu)`);
    }
    Object.assign(env, {
      CC: `${crossPrefix}gcc`, CXX: `${crossPrefix}g++`, LINK: `${crossPrefix}g++`, AR: `${crossPrefix}ar`,
      PREBUILD_STRIP_BIN: `${crossPrefix}strip`,
    });
  }
  const prebuildify = require.resolve('prebuildify/bin.js');
  // Only Linux has two C libraries, so only Linux binaries carry the libc tag node-gyp-build matches.
  const tags = libc ? ['--tag-libc'] : [];
  run(process.execPath, [prebuildify, '--napi', '--strip', ...tags, `--arch=${arch}`, `--cwd=${stage}`, `--out=${root}`], env);
  if (!existsSync(outFile)) die(`prebuildify finished but ${relative(root, outFile)} is not there`);
}

// Check what was written.
if (!cross) {
  const probe = `const m = require(${JSON.stringify(outFile)}); const i = m.cpuInfo(); console.log(i.arch + ': variants ' + i.variants.join(', ') + ', active ' + i.isa)`;
  const r = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8' });
  if (r.status !== 0) die(`${relative(root, outFile)} does not load: ${r.stderr.trim()}`);
  console.error(`[prebuildify] ${relative(root, outFile)} loads (${r.stdout.trim()})`);
} else {
  const head = Buffer.alloc(20);
  const fd = openSync(outFile, 'r');
  readSync(fd, head, 0, 20, 0);
  closeSync(fd);
  const machine = head.readUInt16LE(18);
  if (head.toString('latin1', 1, 4) !== 'ELF' || machine !== 0xb7) die(`${relative(root, outFile)} is not an AArch64 ELF file (e_machine 0x${machine.toString(16)})`);
  console.error(`[prebuildify] ${relative(root, outFile)}: AArch64 ELF shared object`);
}
