// core-native's moeSwitchGLU validates every argument itself (SwitchGLU checks most of them first, so
// these calls go to the binding directly).
import { describe, expect, test } from 'vitest';
import type { NativeWeight } from '@mlxcel/core-native';
import { moeSwitchGLU, type MoeNativeArgs } from '../src/native.js';

const E = 4, H = 64, I = 32, T = 3, k = 2;
const f32w = (rows: number, cols: number): NativeWeight => ({ dtype: 0, data: new Float32Array(rows * cols), rows, cols });
const base = (): MoeNativeArgs => ({
  x: new Float32Array(T * H), T, k, numExperts: E,
  ids: Int32Array.from([0, 1, 2, 3, 1, 0]), weights: new Float32Array(T * k).fill(0.5),
  gate: f32w(E * I, H), up: f32w(E * I, H), down: f32w(E * H, I),
  activation: 0, path: 0, out: new Float32Array(T * H),
});

describe('moeSwitchGLU argument checks', () => {
  test('a valid call runs and reports its path', () => {
    // auto: gather exactly when no expert is selected twice
    expect(moeSwitchGLU({ ...base(), T: 2, ids: Int32Array.from([0, 1, 2, 3]) })).toBe('gather');
    expect(moeSwitchGLU(base())).toBe('grouped');
    expect(moeSwitchGLU({ ...base(), path: 1 })).toBe('gather');
    expect(moeSwitchGLU({ ...base(), path: 2 })).toBe('grouped');
  });

  test('shapes', () => {
    expect(() => moeSwitchGLU({ ...base(), k: 5 })).toThrow(/k = 5 is outside \[1, 4\]/);
    expect(() => moeSwitchGLU({ ...base(), gate: f32w(E * I + 1, H) })).toThrow(/gate rows 129 are not numExperts \(4\) x intermediate/);
    expect(() => moeSwitchGLU({ ...base(), up: f32w(E * I, H + 1) })).toThrow(/up \[128, 65\] does not match gate \[128, 64\]/);
    expect(() => moeSwitchGLU({ ...base(), down: f32w(E * H, I + 1) })).toThrow(/down \[256, 33\] should be \[numExperts x hidden, intermediate\] = \[256, 32\]/);
    expect(() => moeSwitchGLU({ ...base(), gateUp: f32w(E * 2 * I, H) })).toThrow(/either gateUp \(fused\) or gate and up/);
    expect(() => moeSwitchGLU({ ...base(), gate: undefined, up: undefined, gateUp: f32w(E * 2 * I + 2, H) })).toThrow(/gateUp rows 258/);
  });

  test('buffers and ids', () => {
    expect(() => moeSwitchGLU({ ...base(), x: new Float32Array(T * H - 1) })).toThrow(/x has 191 elements, needs 192/);
    expect(() => moeSwitchGLU({ ...base(), out: new Float32Array(10) })).toThrow(/out has 10 elements/);
    expect(() => moeSwitchGLU({ ...base(), weights: new Float32Array(5) })).toThrow(/weights has 5 elements, needs 6/);
    expect(() => moeSwitchGLU({ ...base(), ids: new Int32Array(5) })).toThrow(/ids has 5 elements/);
    expect(() => moeSwitchGLU({ ...base(), ids: Int32Array.from([0, 1, 2, 3, 1, 7]) })).toThrow(/ids\[5\] = 7 \(token 2\) is outside \[0, 4\)/);
    expect(() => moeSwitchGLU({ ...base(), ids: new Float32Array(6) as unknown as Int32Array })).toThrow(TypeError);
    expect(() => moeSwitchGLU({ ...base(), down: { dtype: 0, data: new Float32Array(10), rows: E * H, cols: I } })).toThrow(/down.data has 40 bytes, needs 32768/);
  });

  test('activation and path codes', () => {
    expect(() => moeSwitchGLU({ ...base(), activation: 3 })).toThrow(/activation 3 is not SILU \(0\) or GELU_TANH \(1\)/);
    expect(() => moeSwitchGLU({ ...base(), path: 3 as 0 })).toThrow(/path = 3 is outside \[0, 2\]/);
  });
});
