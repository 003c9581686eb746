// Root causes fixed in @mlxcel/tensor: ids wrapped by Int32Array.from / toI32, checkpoint files that
// are not regular files (a FIFO blocked open()), shard names escaping the model folder, wrong-typed
// weight_map entries, string quantization values, and the opt-in NaN/Inf weight scan.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Checkpoint, MemoryWeights, quantParamsFor, scanWeights, Tensor, toTokenIds, writeSafetensors } from '../src/index.js';

const root = mkdtempSync(join(tmpdir(), 'mlxcel-harden-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
function folder(files: Record<string, string | Record<string, Tensor>>): string {
  const dir = join(root, `m${n++}`);
  mkdirSync(dir);
  for (const [name, body] of Object.entries(files)) {
    if (typeof body === 'string') writeFileSync(join(dir, name), body);
    else writeSafetensors(join(dir, name), body);
  }
  return dir;
}
const t = () => ({ a: Tensor.fromF32(new Float32Array([1, 2]), [2]) });

describe('toTokenIds', () => {
  it('refuses what Int32Array.from would wrap or truncate', () => {
    expect(() => toTokenIds([4294967297], '--ids')).toThrow(/--ids\[0\] = 4294967297 is outside \[0, 2\^31\)/);
    expect(() => toTokenIds([1.5], 'ids')).toThrow(/ids\[0\] = 1\.5 is not an integer token id/);
    expect(() => toTokenIds(['3'], 'ids')).toThrow(/ids\[0\] = "3" is not a token id/);
    expect(() => toTokenIds([NaN], 'ids')).toThrow(/NaN is not an integer/);
    expect(() => toTokenIds(new BigInt64Array([2n ** 40n + 5n]), 'ids')).toThrow(/1099511627781 is outside/);
    expect(() => toTokenIds(new Int32Array([5, 300]), 'ids', 256)).toThrow(/ids\[1\] = 300 is outside the vocabulary \[0, 256\)/);
    expect(() => toTokenIds('12', 'ids')).toThrow(/ids must be a list of token ids/);
    expect([...toTokenIds(new BigInt64Array([7n]), 'ids')]).toEqual([7]);
    const i32 = new Int32Array([1, 2]);
    expect(toTokenIds(i32, 'ids', 10)).toBe(i32);
  });
  it('Tensor.toI32 refuses I64 values outside int32', () => {
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setBigInt64(0, 2n ** 40n + 5n, true);
    expect(() => new Tensor('I64', [1], bytes).toI32()).toThrow(/element 0 = 1099511627781 \(I64\) does not fit int32/);
  });
});

describe('Checkpoint.open', () => {
  const index = (map: unknown) => JSON.stringify({ metadata: {}, weight_map: map });
  it('refuses shard names outside the model folder', () => {
    for (const bad of ['../../../../etc/passwd', '/etc/passwd', 'sub/../../x.safetensors']) {
      const dir = folder({ 'model.safetensors.index.json': index({ a: bad }) });
      expect(() => Checkpoint.open(dir)).toThrow(/weight_map\["a"\]: ".*" points outside the model folder/);
    }
  });
  it('refuses weight_map entries that are not strings, and a weight_map that is not an object', () => {
    expect(() => Checkpoint.open(folder({ 'model.safetensors.index.json': index({ a: 3 }) }))).toThrow(/weight_map\["a"\] must be a shard file name \(a string\), got 3/);
    expect(() => Checkpoint.open(folder({ 'model.safetensors.index.json': index(['x']) }))).toThrow(/missing "weight_map"/);
  });
  it('refuses a directory given as a shard or as the folder', () => {
    const dir = folder({ 'model.safetensors.index.json': index({ a: 'model-1.safetensors' }) });
    mkdirSync(join(dir, 'model-1.safetensors'));
    expect(() => Checkpoint.open(dir)).toThrow(/safetensors shard .*model-1\.safetensors is a directory, not a regular file/);
    const file = join(folder({ 'model.safetensors': t() }), 'model.safetensors');
    expect(() => Checkpoint.open(file)).toThrow(/is not a directory/);
  });
  it.skipIf(process.platform === 'win32')('refuses a FIFO shard at once instead of blocking', () => {
    const dir = folder({ 'config.json': '{}' });
    expect(spawnSync('mkfifo', [join(dir, 'model.safetensors')]).status).toBe(0);
    const t0 = Date.now();
    expect(() => Checkpoint.open(dir)).toThrow(/model\.safetensors is a FIFO \(named pipe\), not a regular file/);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
  it('still opens a valid sharded folder', () => {
    const dir = folder({ 'model-1.safetensors': t(), 'model.safetensors.index.json': index({ a: 'model-1.safetensors' }) });
    expect(Checkpoint.open(dir).keys()).toEqual(['a']);
  });
});

describe('quantization values', () => {
  it('strings are refused naming the key', () => {
    expect(() => quantParamsFor({ bits: 4, group_size: '64' as never }, 'layers.0.mlp')).toThrow(/layers\.0\.mlp: quantization group_size must be an integer, got "64" \(a string\)/);
    expect(() => quantParamsFor({ bits: '4' as never }, 'x')).toThrow(/quantization bits must be an integer/);
  });
});

describe('scanWeights (--check-weights)', () => {
  it('names the first tensor and element holding NaN/Inf, in f32, f16 and bf16', () => {
    const m = new MemoryWeights();
    m.set('ok', Tensor.fromF32(new Float32Array([1, 2, 3]), [3]));
    m.set('z.bad', Tensor.fromF32(new Float32Array([0, 0, Infinity]), [3]));
    expect(() => scanWeights(m, 'dir')).toThrow(/dir: tensor z\.bad \(F32 \[3\]\) holds Infinity at element 2/);
    const bf = new MemoryWeights();
    bf.set('w', new Tensor('BF16', [2], new Uint8Array([0x80, 0x3f, 0xc0, 0x7f])));  // [1, NaN]
    expect(() => scanWeights(bf)).toThrow(/tensor w \(BF16 \[2\]\) holds NaN at element 1/);
    const f16 = new MemoryWeights();
    f16.set('h', new Tensor('F16', [2], new Uint8Array([0x00, 0x3c, 0x00, 0x7c])));  // [1, +Inf]
    expect(() => scanWeights(f16)).toThrow(/holds Infinity at element 1/);
    const good = new MemoryWeights();
    good.set('ok', Tensor.fromF32(new Float32Array([1, 2, 3]), [3]));
    good.set('ids', Tensor.fromI32(new Int32Array([1, 2])));
    expect(scanWeights(good)).toBe(1);
  });
});
