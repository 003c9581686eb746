// Environment overrides read at load time, checked in child processes: MLXCEL_ISA forces a kernel
// variant (and a bad value fails the import with a clear message), MLXCEL_THREADS sizes the thread pool.
// Also the CPU dispatch: the default variant is the best one the CPU runs.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';

const lib = fileURLToPath(new URL('../lib/index.js', import.meta.url));

function child(env: Record<string, string>, code = 'console.log(JSON.stringify(m.cpuInfo()))') {
  const script = `import(${JSON.stringify(lib)}).then((m) => { ${code} })`;
  const r = spawnSync(process.execPath, ['-e', script], {
    env: { ...process.env, MLXCEL_ISA: '', MLXCEL_THREADS: '', MLXCEL_FAST_GEMM: '', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// A 64 x 256 q4 weight (group 64, f32 scales) and 32 rows of x: "fast" against "exact", bit for bit.
const fastGemmScript = `
  const rnd = (i) => ((Math.imul(i + 1, 2654435761) >>> 0) / 2 ** 32);
  const w = { dtype: 3, rows: 64, cols: 256, bits: 4, groupSize: 64, scaleDtype: 0,
    data: new Uint8Array(64 * 128).map((_, i) => (rnd(i) * 256) | 0),
    scales: new Uint8Array(new Float32Array(256).map((_, i) => 0.01 + rnd(i + 7) * 0.02).buffer),
    biases: new Uint8Array(new Float32Array(256).map((_, i) => -0.1 + rnd(i + 9) * 0.05).buffer) };
  const x = new Float32Array(32 * 256).map((_, i) => rnd(i + 11) * 4 - 2);
  const run = (mode) => { m.setMatmulPrecision(mode); const y = new Float32Array(32 * 64); m.matmul(x, 32, w, null, y); return y; };
  const a = run('exact'), b = run('fast');
  const info = m.cpuInfo();
  console.log(JSON.stringify({ isa: info.isa, narrow: info.features.narrowIntMultiply, equal: a.every((v, i) => Object.is(v, b[i])) }));`;

describe('environment overrides', () => {
  it('Zen 1 / Zen+ (narrowIntMultiply, avx2): "fast" GEMMs take the exact kernel unless MLXCEL_FAST_GEMM=int16; elsewhere the variable changes nothing', () => {
    const auto = child({}, fastGemmScript), int16 = child({ MLXCEL_FAST_GEMM: 'int16' }, fastGemmScript);
    expect(auto.status, auto.stderr).toBe(0);
    expect(int16.status, int16.stderr).toBe(0);
    const a = JSON.parse(auto.stdout), b = JSON.parse(int16.stdout);
    expect(typeof a.narrow).toBe('boolean');
    if (a.narrow && a.isa === 'avx2') {
      expect(a.equal).toBe(true); // the exact kernel's bits
      expect(b.equal).toBe(false); // the integer GEMM's
    } else {
      expect(b.equal).toBe(a.equal);
      // Variants whose GEMM takes 16-bit activations for 4-bit weights differ from exact.
      if (['avx2', 'avx2vnni', 'avx512vnni', 'avx512amx', 'neon_dotprod'].includes(a.isa)) expect(a.equal).toBe(false);
    }
  });

  it('without MLXCEL_ISA the best variant the CPU supports is used', () => {
    const r = child({});
    expect(r.status).toBe(0);
    const info = JSON.parse(r.stdout);
    expect(info.isa).toBe(info.variants[info.variants.length - 1]);
    expect(info.variants[0]).toBe('scalar');
    if (info.arch === 'x64' && info.features.avx2) expect(info.variants).toContain('avx2');
    if (info.arch === 'x64' && info.features.avx512) expect(info.variants).toContain('avx512');
    if (info.arch === 'x64' && info.features.avx512 && info.features.avx512vnni) expect(info.variants).toContain('avx512vnni');
    if (info.arch === 'x64' && info.features.amxInt8) expect(info.variants).toContain('avx512amx');
    if (info.arch === 'x64' && info.features.avx2 && info.features.avxvnni) expect(info.variants).toContain('avx2vnni');
    if (info.arch === 'arm64' && info.features.neonDotprod) expect(info.variants).toContain('neon_dotprod');
  });

  for (const isa of native.cpuInfo().variants)
    it(`MLXCEL_ISA=${isa} selects that variant at load`, () => {
      const r = child({ MLXCEL_ISA: isa });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).isa).toBe(isa);
    });

  it.each(['0', '-1', 'abc', '1025', '1e9', '3.5', 'lots'])('MLXCEL_THREADS=%s fails the import with one line naming the variable', (v) => {
    const r = child({ MLXCEL_THREADS: v }, 'console.log("loaded")');
    expect(r.status).not.toBe(0);
    expect(r.stdout).not.toContain('loaded');
    expect(r.stderr).toContain(`MLXCEL_THREADS=${JSON.stringify(v)} must be a whole number of threads from 1 to 1024`);
  });

  it('an MLXCEL_ISA that is no variant name fails the import naming the variable and the names', () => {
    const r = child({ MLXCEL_ISA: 'bogus' }, 'console.log("loaded")');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/MLXCEL_ISA="bogus" is not a kernel variant \(one of: scalar, avx2/);
  });

  it('an MLXCEL_FAST_GEMM other than auto / int16 fails the import naming the variable', () => {
    const r = child({ MLXCEL_FAST_GEMM: 'int8' }, 'console.log("loaded")');
    expect(r.status).not.toBe(0);
    expect(r.stdout).not.toContain('loaded');
    expect(r.stderr).toContain('MLXCEL_FAST_GEMM="int8" must be auto or int16');
    expect(child({ MLXCEL_FAST_GEMM: 'auto' }, 'console.log("loaded")').stdout).toContain('loaded');
  });

  it('a bad MLXCEL_ISA fails the import with a message naming the variable and the available variants', () => {
    const missing = process.arch === 'arm64' ? 'avx2' : 'neon';  // a real variant name this build lacks
    const r = child({ MLXCEL_ISA: missing }, 'console.log("loaded")');
    expect(r.status).not.toBe(0);
    expect(r.stdout).not.toContain('loaded');
    expect(r.stderr).toMatch(new RegExp(`MLXCEL_ISA: ISA variant '${missing}' is not available on this CPU/build \\(available: scalar[^)]*\\)`));
  });

  it('MLXCEL_THREADS sizes the pool; setThreads changes it at run time', () => {
    for (const n of ['1', '3', '7']) {
      const r = child({ MLXCEL_THREADS: n });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).threads).toBe(Number(n));
    }
    const r = child({ MLXCEL_THREADS: '2' }, 'm.setThreads(5); console.log(JSON.stringify(m.cpuInfo()))');
    expect(JSON.parse(r.stdout).threads).toBe(5);
  });

  it('a pool larger than the machine still computes correctly (oversubscribed workers)', () => {
    const code = `
      const K = 4096, N = 512, x = new Float32Array(K).map((_, i) => Math.sin(i));
      const w = { dtype: 0, data: new Float32Array(N * K).map((_, i) => Math.cos(i)), rows: N, cols: K };
      const y1 = new Float32Array(N), y2 = new Float32Array(N);
      m.setThreads(1); m.matmul(x, 1, w, null, y1);
      m.setThreads(16); for (let i = 0; i < 50; i++) m.matmul(x, 1, w, null, y2);
      console.log(JSON.stringify(Array.from(y1).every((v, i) => Object.is(v, y2[i]))));`;
    const r = child({}, code);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('true');
  });
});

// The default pool size counts the physical cores this process may use, not the host's: a process
// pinned to one CPU (taskset, a cpuset, a container's pinning) gets a one-thread pool.
const hasTaskset = process.platform === 'linux' && spawnSync('taskset', ['-c', '0', 'true']).status === 0;
describe.runIf(hasTaskset)('default thread count (Linux)', () => {
  it('follows the CPU affinity mask', () => {
    const script = `import(${JSON.stringify(lib)}).then((m) => console.log(JSON.stringify(m.cpuInfo())))`;
    const r = spawnSync('taskset', ['-c', '0', process.execPath, '-e', script], {
      env: { ...process.env, MLXCEL_ISA: '', MLXCEL_THREADS: '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const info = JSON.parse(r.stdout);
    expect(info.physicalCores).toBe(1);
    expect(info.threads).toBe(1);
  });
});
