// The expert block: gather path (decode) == grouped path (prefill) == naive float64 reference, for f32,
// bf16 and 4-bit experts, separate and fused gate/up, and 1..300 tokens.
import { afterAll, describe, expect, test } from 'vitest';
import { cpuInfo, setIsa, setThreads } from '@mlxcel/core-native';
import { MlxcelError, type Weight } from '@mlxcel/tensor';
import { softmaxTopK, SwitchGLU, type Activation } from '../src/index.js';
import { makeExperts, naiveSwitchGLU, relErr, rng, uniform, type Storage } from './helpers.js';

const TOL = 1e-5;
type Split = { gate: Weight; up: Weight; down: Weight };
const TOKENS = [1, 2, 7, 64, 300];

/** Random top-k routing; from 64 tokens on, expert 0 is favoured so it gets more rows than one GEMM
 * block (and some experts may get none). */
function routing(T: number, E: number, k: number, seed: number) {
  const r = rng(seed);
  const logits = uniform(T * E, r, 2);
  if (T >= 64) for (let t = 0; t < T; t++) logits[t * E] += 3;
  return softmaxTopK(logits, E, k, { renormalize: false });
}

interface Config { name: string; E: number; H: number; I: number; k: number; group: number; act: Activation; kinds: Storage[] }
const CONFIGS: Config[] = [
  { name: 'E8 k2 H128 I192 silu', E: 8, H: 128, I: 192, k: 2, group: 64, act: 'silu', kinds: ['f32', 'bf16', 'q4'] },
  { name: 'E5 k3 H96 I160 gelu_tanh g32', E: 5, H: 96, I: 160, k: 3, group: 32, act: 'gelu_tanh', kinds: ['f32', 'bf16', 'q4'] },
  { name: 'E4 k2 H70 I45 (ragged dims)', E: 4, H: 70, I: 45, k: 2, group: 64, act: 'silu', kinds: ['f32', 'bf16'] },
];

function check(c: Config, kind: Storage, fused: boolean, tokens: number[], seed = 11) {
  const ex = makeExperts({ E: c.E, H: c.H, I: c.I, kind, fused, act: c.act, seed, group: c.group });
  for (const T of tokens) {
    const x = uniform(T * c.H, rng(seed + T));
    const rt = routing(T, c.E, c.k, seed * 7 + T);
    const ref = naiveSwitchGLU(ex, c.act, x, T, rt.ids, rt.weights);
    const gather = ex.glu.forward(x, T, rt.ids, rt.weights, { path: 'gather' });
    expect(ex.glu.lastPath).toBe('gather');
    const grouped = ex.glu.forward(x, T, rt.ids, rt.weights, { path: 'grouped' });
    expect(ex.glu.lastPath).toBe('grouped');
    const auto = ex.glu.forward(x, T, rt.ids, rt.weights);
    expect(ex.glu.lastPath).toBe(new Set(rt.ids).size === rt.ids.length ? 'gather' : 'grouped');
    const ctx = `${c.name} ${kind} ${fused ? 'fused' : 'separate'} T=${T}`;
    expect(relErr(gather, ref), `gather ${ctx}`).toBeLessThanOrEqual(TOL);
    expect(relErr(grouped, ref), `grouped ${ctx}`).toBeLessThanOrEqual(TOL);
    expect(relErr(grouped, gather), `grouped vs gather ${ctx}`).toBeLessThanOrEqual(TOL);
    expect(relErr(auto, ref), `auto ${ctx}`).toBeLessThanOrEqual(TOL);
  }
}

describe('SwitchGLU paths vs naive reference', () => {
  for (const c of CONFIGS)
    for (const kind of c.kinds)
      for (const fused of [false, true])
        test(`${c.name}, ${kind}, ${fused ? 'fused gate_up' : 'separate gate/up'}, T = ${TOKENS.join(', ')}`, () => check(c, kind, fused, TOKENS));
});

describe('every compiled kernel variant', () => {
  const original = cpuInfo().isa;
  afterAll(() => void setIsa(original));
  for (const isa of cpuInfo().variants)
    test(`${isa}: q4 and f32, both layouts, T = 7 and 64`, () => {
      setIsa(isa);
      for (const kind of ['q4', 'f32'] as const) for (const fused of [false, true]) check(CONFIGS[1]!, kind, fused, [7, 64], 5);
    });
});

describe('SwitchGLU behaviour', () => {
  const c = CONFIGS[0]!;

  test('fused and separate layouts of the same float weights give the same output', () => {
    const sep = makeExperts({ E: c.E, H: c.H, I: c.I, kind: 'f32', fused: false, act: 'silu', seed: 3 });
    const fus = makeExperts({ E: c.E, H: c.H, I: c.I, kind: 'f32', fused: true, act: 'silu', seed: 3 });
    const x = uniform(40 * c.H, rng(1)), rt = routing(40, c.E, 2, 1);
    for (const path of ['gather', 'grouped'] as const)
      expect(relErr(fus.glu.forward(x, 40, rt.ids, rt.weights, { path }), sep.glu.forward(x, 40, rt.ids, rt.weights, { path }))).toBe(0);
  });

  test('results do not depend on the thread count', () => {
    const ex = makeExperts({ E: c.E, H: c.H, I: c.I, kind: 'q4', fused: false, act: 'silu', seed: 9 });
    const x = uniform(150 * c.H, rng(2)), rt = routing(150, c.E, 2, 2);
    const threads = cpuInfo().threads;
    try {
      const run = () => ['gather', 'grouped'].map((p) => ex.glu.forward(x, 150, rt.ids, rt.weights, { path: p as 'gather' }));
      setThreads(1);
      const one = run();
      setThreads(Math.max(2, threads));
      const many = run();
      expect(relErr(one[0]!, many[0]!)).toBe(0);
      expect(relErr(one[1]!, many[1]!)).toBe(0);
    } finally {
      setThreads(threads);
    }
  });

  test('out may alias x; T = 0 is a no-op; repeated experts in one row add up', () => {
    const ex = makeExperts({ E: c.E, H: c.H, I: c.I, kind: 'f32', fused: false, act: 'silu', seed: 4 });
    const x = uniform(30 * c.H, rng(3)), rt = routing(30, c.E, 2, 3);
    for (const path of ['gather', 'grouped'] as const) {
      const want = ex.glu.forward(x, 30, rt.ids, rt.weights, { path });
      const inPlace = x.slice();
      ex.glu.forward(inPlace, 30, rt.ids, rt.weights, { path, out: inPlace });
      expect(relErr(inPlace, want)).toBe(0);
    }
    expect(ex.glu.forward(new Float32Array(0), 0, new Int32Array(0), new Float32Array(0)).length).toBe(0);
    const x1 = x.subarray(0, c.H);
    const twice = ex.glu.forward(x1, 1, Int32Array.from([3, 3]), Float32Array.from([0.25, 0.5]));
    const once = ex.glu.forward(x1, 1, Int32Array.from([3]), Float32Array.from([0.75]));
    expect(relErr(twice, once)).toBeLessThan(1e-6);
  });

  test('argument errors name what is wrong', () => {
    const ex = makeExperts({ E: 4, H: 64, I: 64, kind: 'f32', fused: false, act: 'silu', seed: 1 });
    const x = new Float32Array(2 * 64);
    expect(() => ex.glu.forward(x, 2, Int32Array.from([0, 4]), Float32Array.from([1, 1]))).toThrow(/ids\[1\] = 4 \(token 1\) is outside \[0, 4\)/);
    expect(() => ex.glu.forward(x, 2, Int32Array.from([0, -1]), Float32Array.from([1, 1]))).toThrow(RangeError);
    expect(() => ex.glu.forward(x, 3, Int32Array.from([0, 1, 2]), Float32Array.from([1, 1, 1]))).toThrow(/x has 128 values, expected 3 x 64/);
    expect(() => ex.glu.forward(x, 2, Int32Array.from([0, 1, 2]), Float32Array.from([1, 1, 1]))).toThrow(/not \[2, k\]/);
    expect(() => ex.glu.forward(x, 2, Int32Array.from([0, 1]), Float32Array.from([1]))).toThrow(/1 routing weights for 2 expert ids/);
    expect(() => ex.glu.forward(x, 1, new Int32Array(10), new Float32Array(10))).toThrow(/x has 128 values/);
    expect(() => ex.glu.forward(x.subarray(0, 64), 1, new Int32Array(5), new Float32Array(5))).toThrow(/k = 5 experts per token but only 4/);
    expect(() => ex.glu.forward(x, 2, Int32Array.from([0, 1]), Float32Array.from([1, 1]), { path: 'fast' as 'auto' })).toThrow(MlxcelError);
  });

  test('constructor checks stacked shapes', () => {
    const a = makeExperts({ E: 4, H: 64, I: 32, kind: 'f32', fused: false, act: 'silu', seed: 1 });
    const b = makeExperts({ E: 4, H: 64, I: 64, kind: 'f32', fused: false, act: 'silu', seed: 1 });
    const aw = a.glu.weights as Split, bw = b.glu.weights as Split;
    expect(() => new SwitchGLU({ gate: aw.gate, up: bw.up, down: aw.down }, 'silu')).toThrow(/up is \[4,64,64\], expected \[4, 32, 64\]/);
    expect(() => new SwitchGLU({ gate: aw.gate, up: aw.up, down: aw.down.index(0) }, 'silu')).toThrow(/down must be stacked/);
    expect(() => new SwitchGLU({ gateUp: aw.gate, down: aw.down }, 'silu')).toThrow(/gateUp is \[4,32,64\], expected \[4, 64, 64\]/);
    expect(() => new SwitchGLU({ gate: aw.gate, up: aw.up, down: aw.down }, 'relu' as Activation)).toThrow(/relu/);
  });
});
