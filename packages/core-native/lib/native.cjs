'use strict';
// Finds and loads the native addon (build/Release when built from source, else the prebuilt binary in
// prebuilds/<platform>-<arch>/ that matches this system) and holds the op-code tables that go with it.
// When there is no addon, or it will not load, `error` is one error whose one-line message says what
// is missing and what to run, for where this copy of the package lives: this repository's checkout,
// or an install by npm, pnpm or bun. It is exported rather than thrown because each entry (index.cjs,
// index.js) throws it itself: Node 20 reports an exception thrown by a CommonJS module that ES modules
// import as uncaught, with a stack, even where the importer catches it.
const { existsSync, readdirSync } = require('node:fs');
const { join, sep } = require('node:path');
const nodeGypBuild = require('node-gyp-build');
const { checkEnv } = require('./env.cjs');

const root = join(__dirname, '..');
const BUILD_NEEDS = 'python3, make and a C++17 compiler';

/** 'linux-x64 (glibc, musl), darwin-arm64, ...' for what this copy's prebuilds/ holds. */
function prebuiltPlatforms() {
  let dirs = [];
  try {
    dirs = readdirSync(join(root, 'prebuilds'));
  } catch {
    return '';
  }
  return dirs
    .sort()
    .map((dir) => {
      let libcs = [];
      try {
        libcs = readdirSync(join(root, 'prebuilds', dir))
          .map((f) => (/\.(glibc|musl)\.node$/.exec(f) || [])[1])
          .filter(Boolean);
      } catch {}
      return libcs.length ? `${dir} (${libcs.join(', ')})` : dir;
    })
    .join(', ');
}

function libc() {
  if (process.platform !== 'linux') return '';
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
  return report?.header?.glibcVersionRuntime ? 'glibc' : 'musl';
}

/** What to run to get a working addon, for where this package is installed. */
function advice() {
  const inNodeModules = root.split(sep).includes('node_modules');
  if (!inNodeModules && existsSync(join(root, '..', '..', 'pnpm-workspace.yaml'))) {
    return `In this repository, build it with \`pnpm --filter @mlxcel/core-native build\` (or \`npm run demo\`, which sets up everything; needs ${BUILD_NEEDS}).`;
  }
  if (root.includes(`${sep}node_modules${sep}.pnpm${sep}`)) {
    return `pnpm blocks install scripts unless approved: run \`pnpm approve-builds\` and select @mlxcel/core-native (or list it under \`onlyBuiltDependencies\`), then \`pnpm rebuild @mlxcel/core-native\` to build it from source (needs ${BUILD_NEEDS}).`;
  }
  if (root.includes(`${sep}node_modules${sep}.bun${sep}`) || /\bbun\//.test(process.env.npm_config_user_agent ?? '')) {
    return `Run \`bun pm trust @mlxcel/core-native\` to let its install script build it from source (needs ${BUILD_NEEDS}).`;
  }
  return `Run \`npm rebuild @mlxcel/core-native --build-from-source\` to build it from source (needs ${BUILD_NEEDS}).`;
}

function oneLine(text) {
  return String(text).replace(/\s*\n\s*/g, ' ').trim();
}

function fail(code, what) {
  const platforms = prebuiltPlatforms();
  const shipped = platforms ? `Prebuilt binaries in this copy: ${platforms}.` : 'This copy has no prebuilt binaries.';
  const e = new Error(`@mlxcel/core-native: ${what}. ${shipped} ${advice()}`);
  e.code = code;
  return e;
}

function load() {
  try {
    checkEnv();  // MLXCEL_THREADS / MLXCEL_ISA, before the addon reads them (env.cjs)
  } catch (e) {
    return { error: e };
  }
  const system = [`${process.platform}-${process.arch}`, libc(), `Node ${process.versions.node}`].filter(Boolean).join(', ');
  let file;
  try {
    file = nodeGypBuild.resolve(root);
  } catch {
    return { error: fail('MLXCEL_NATIVE_MISSING', `no native addon for this system (${system})`) };
  }
  try {
    return { native: require(file) };
  } catch (err) {
    // The addon loaded but refused to start (a bad MLXCEL_ISA, say): its own message says why.
    if (!err || err.code !== 'ERR_DLOPEN_FAILED') {
      if (err instanceof Error && !('code' in err)) err.code = /^MLXCEL_ISA:/.test(err.message) ? 'E_ENV' : 'MLXCEL_NATIVE_INIT';
      return { error: err };
    }
    const rel = file.startsWith(root) ? file.slice(root.length + 1) : file;
    return { error: fail('MLXCEL_NATIVE_LOAD_FAILED', `the native addon ${rel} does not load on this system (${system}): ${oneLine(err && err.message ? err.message : err)}`) };
  }
}

/** Storage dtype codes understood by the kernels. */
const DType = Object.freeze({ F32: 0, F16: 1, BF16: 2, QAFFINE: 3 });
/** Unary op codes for `unary`. */
const UnaryOp = Object.freeze({ SILU: 0, GELU_TANH: 1, GELU_ERF: 2, RELU: 3, TANH: 4, EXP: 5, SIGMOID: 6, NEG: 7, SQUARE: 8, SQRT: 9 });
/** Binary op codes for `binary`. */
const BinaryOp = Object.freeze({ ADD: 0, SUB: 1, MUL: 2, DIV: 3, MAX: 4 });

const { native, error } = load();
/** The package's exports: every binding by name, the op codes, and `default` (the addon itself). */
// Every kernel (not the set-up functions) is timed while a profile runs (`mlxcel bench --profile`, profile.cjs).
const { withProfiling, startProfile, stopProfile } = require('./profile.cjs');
const UNTIMED = new Set(['cpuInfo', 'setIsa', 'setThreads', 'alloc', 'mmapFile', 'releasePages', 'setMatmulPrecision', 'matmulPrecision', 'matmulPrecisions', 'weightTileLayout']);
// Built once per process and kept on the addon object: a second evaluation of this file (a test runner
// that loads modules itself, or two copies of the package) must hand out the same wrapped functions and
// the same profile counters, or require() and import would see different objects.
const API = Symbol.for('@mlxcel/core-native.api');
const api = native
  ? (native[API] ??= { ...withProfiling(native, Object.keys(native).filter((k) => !UNTIMED.has(k))), startProfile, stopProfile, DType, UnaryOp, BinaryOp,
      // Every mode setMatmulPrecision takes, as the binding names them (for callers that validate a user's choice).
      MATMUL_PRECISIONS: Object.freeze(native.matmulPrecisions()), default: native })
  : null;
module.exports = { api, error };
