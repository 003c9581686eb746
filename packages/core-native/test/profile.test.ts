// startProfile / stopProfile: per-op-kind timing of kernel calls (mlxcel bench --profile).
import { describe, expect, it } from 'vitest';
import * as native from '../lib/index.js';
import { randF32 } from './helpers.js';

describe('op profile', () => {
  it('counts each kernel call by kind (matmul split into GEMV and GEMM) only while a profile runs', () => {
    const K = 64, N = 32;
    const w: native.NativeWeight = { dtype: 0, data: randF32(N * K, 1), rows: N, cols: K };
    const x = randF32(17 * K, 2), y = new Float32Array(17 * N), o = new Float32Array(16 * K);
    native.matmul(x, 1, w, null, y); // before any profile: not counted
    native.startProfile();
    native.matmul(x, 1, w, null, y);
    native.matmul(x, 1, w, null, y);
    native.matmul(x, 16, w, null, y);
    native.matmul(x, 17, w, null, y);
    native.rmsNorm(x, 16, K, null, 1e-6, false, o);
    const p = native.stopProfile();
    expect(p['matmul (GEMV, M <= 16)']?.calls).toBe(3);
    expect(p['matmul (GEMM, M > 16)']?.calls).toBe(1);
    expect(p.rmsNorm?.calls).toBe(1);
    for (const e of Object.values(p)) expect(e.ms).toBeGreaterThanOrEqual(0);
    native.matmul(x, 1, w, null, y); // after stop: not counted
    native.startProfile();
    expect(native.stopProfile()).toEqual({});
  });

  it('matmulShapes: each matmul kind split by the weight shape, only until the next plain start', () => {
    const w = (rows: number, cols: number): native.NativeWeight => ({ dtype: 0, data: randF32(rows * cols, rows + cols), rows, cols });
    const a = w(32, 64), b = w(16, 64);
    const x = randF32(17 * 64, 3), y = new Float32Array(17 * 32);
    native.startProfile({ matmulShapes: true });
    native.matmul(x, 1, a, null, y);
    native.matmul(x, 1, a, null, y);
    native.matmul(x, 1, b, null, y);
    native.matmul(x, 17, a, null, y);
    let p = native.stopProfile();
    expect(p['matmul (GEMV, M <= 16) [32 x 64]']?.calls).toBe(2);
    expect(p['matmul (GEMV, M <= 16) [16 x 64]']?.calls).toBe(1);
    expect(p['matmul (GEMM, M > 16) [32 x 64]']?.calls).toBe(1);
    expect(p['matmul (GEMV, M <= 16)']).toBeUndefined();
    native.startProfile();
    native.matmul(x, 1, a, null, y);
    p = native.stopProfile();
    expect(Object.keys(p)).toEqual(['matmul (GEMV, M <= 16)']);
  });

  it('a kernel that throws is still counted and its error reaches the caller', () => {
    native.startProfile();
    expect(() => native.matmul(new Float32Array(2), 1, { dtype: 0, data: new Float32Array(4), rows: 2, cols: 2 }, null, new Float32Array(1))).toThrow(/out/);
    expect(native.stopProfile()['matmul (GEMV, M <= 16)']?.calls).toBe(1);
  });
});
