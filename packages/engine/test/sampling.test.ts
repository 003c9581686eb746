import { describe, expect, it } from 'vitest';
import { Sampler } from '../src/sampling/sampler.js';
import { Xoshiro128 } from '../src/sampling/prng.js';
import { applyMinP, applyTopK, applyTopP, newCandidates, resetCandidates, topKIds } from '../src/sampling/filters.js';
import { MlxcelError } from '../src/errors.js';
import { makeRng } from './helpers/random.js';

const ln = Math.log;
const logits = (xs: number[]): Float32Array => Float32Array.from(xs);
/** log of a probability vector: softmax(logits) = p exactly. */
const fromProbs = (ps: number[]): Float32Array => logits(ps.map((p) => ln(p)));

/** Empirical token frequencies over n draws. */
function frequencies(sampler: Sampler, z: Float32Array, n: number, history: number[] = []): number[] {
  const counts = new Array<number>(z.length).fill(0);
  for (let i = 0; i < n; i++) counts[sampler.sample(z, history).token]!++;
  return counts.map((c) => c / n);
}

/** softmax in double precision, the hand formula p_i = e^{z_i} / Σ e^{z_j}. */
function softmax(zs: number[]): number[] {
  const m = Math.max(...zs);
  const e = zs.map((v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
}

function expectClose(actual: number[], expected: number[], tol: number): void {
  expect(actual).toHaveLength(expected.length);
  for (let i = 0; i < expected.length; i++) {
    expect(Math.abs(actual[i]! - expected[i]!), `index ${i}: ${actual[i]} vs ${expected[i]}`).toBeLessThan(tol);
  }
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(MlxcelError);
    return (err as MlxcelError).code;
  }
  return undefined;
}

const N = 40000;
const TOL = 0.012; // > 5 standard deviations of a frequency estimated from 40000 draws

describe('xoshiro128**', () => {
  it('matches the reference implementation', () => {
    const g = Xoshiro128.fromState(1, 2, 3, 4);
    expect(Array.from({ length: 8 }, () => g.nextUint32())).toEqual([
      11520, 0, 5927040, 70819200, 2031721883, 1637235492, 1287239034, 3734860849,
    ]);
    const h = Xoshiro128.fromState(0xdeadbeef, 0x12345678, 0xcafebabe, 0x0badf00d);
    for (let i = 0; i < 1000; i++) h.nextUint32();
    expect(h.nextUint32()).toBe(3651887776);
  });

  it('is deterministic per seed and gives open-interval uniforms', () => {
    const a = new Xoshiro128(42);
    const b = new Xoshiro128(42);
    const c = new Xoshiro128(43);
    const xs = Array.from({ length: 100 }, () => a.nextOpenUnit());
    expect(Array.from({ length: 100 }, () => b.nextOpenUnit())).toEqual(xs);
    expect(Array.from({ length: 100 }, () => c.nextOpenUnit())).not.toEqual(xs);
    for (const x of xs) expect(x > 0 && x < 1).toBe(true);
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.1);
  });
});

describe('greedy and log-probabilities', () => {
  it('argmax at temperature 0 with the log-softmax logprob', () => {
    const s = new Sampler();
    const r = s.sample(logits([1, 3, 2]));
    expect(r.token).toBe(1);
    expect(r.logprob).toBeCloseTo(3 - ln(Math.exp(1) + Math.exp(3) + Math.exp(2)), 6);
    const lp = Array.from(s.logprobs);
    expectClose(lp.map(Math.exp), softmax([1, 3, 2]), 1e-6);
  });

  it('breaks ties towards the first id and ignores the filters', () => {
    const s = new Sampler({ temperature: 0, topK: 1, topP: 0.1, minP: 0.9 });
    expect(s.sample(logits([0, 5, 5, 1])).token).toBe(1);
  });

  it('does not modify the caller logits', () => {
    const z = logits([1, 2, 3]);
    new Sampler({ suppressedIds: [2], logitBias: { 0: 5 }, temperature: 1, seed: 1 }).sample(z);
    expect(Array.from(z)).toEqual([1, 2, 3]);
  });

  it('without logit edits (read in place, no copy) leaves the logits alone and gives what an edit that changes nothing gives', () => {
    const z = logits([0.5, -1, 3, 2.25, 3, -7]);
    for (const temperature of [0, 0.8]) {
      const plain = new Sampler({ temperature, seed: 3 });
      const edited = new Sampler({ temperature, seed: 3, logitBias: { 5: 0 } }); // copies, adds 0
      for (let i = 0; i < 20; i++) {
        const a = plain.sample(z), b = edited.sample(z);
        expect(a).toEqual(b);
      }
      expect(Array.from(z)).toEqual(Array.from(logits([0.5, -1, 3, 2.25, 3, -7])));
    }
  });
});

describe('suppressed ids', () => {
  it('are never chosen and are excluded from the log-softmax', () => {
    const s = new Sampler({ suppressedIds: [1, 3], temperature: 1, seed: 7 });
    const z = logits([0, 10, 1, 9]);
    const freq = frequencies(s, z, 5000);
    expect(freq[1]).toBe(0);
    expect(freq[3]).toBe(0);
    const lp = s.logprobs;
    expect(lp[1]).toBe(-Infinity);
    expect(Math.exp(lp[0]!) + Math.exp(lp[2]!)).toBeCloseTo(1, 6);
    expectClose(freq, [softmax([0, 1])[0]!, 0, softmax([0, 1])[1]!, 0], TOL * 2);
    expect(new Sampler({ suppressedIds: [1] }).sample(z).token).toBe(3);
  });

  it('win over a positive bias and are applied before the penalties', () => {
    const s = new Sampler({ suppressedIds: [0], logitBias: { 0: 100 }, repetitionPenalty: 0.5, frequencyPenalty: -100 });
    expect(s.sample(logits([1, 0]), [0, 0]).token).toBe(1);
  });

  it('fail clearly when nothing is left, or on NaN', () => {
    expect(codeOf(() => new Sampler({ suppressedIds: [0, 1] }).sample(logits([1, 2])))).toBe('SAMPLER_NO_TOKEN');
    expect(codeOf(() => new Sampler().sample(logits([1, NaN])))).toBe('SAMPLER_NAN_LOGITS');
    expect(codeOf(() => new Sampler().sample(logits([])))).toBe('SAMPLER_EMPTY_LOGITS');
  });
});

describe('logit processors', () => {
  it('logit bias is additive', () => {
    const s = new Sampler({ logitBias: new Map([[2, ln(2)]]), temperature: 1, seed: 3 });
    const freq = frequencies(s, logits([0, 0, 0]), N);
    expectClose(Array.from(s.logprobs).map(Math.exp), [0.25, 0.25, 0.5], 1e-6);
    expectClose(freq, [0.25, 0.25, 0.5], TOL);
  });

  it('repetition penalty divides positive and multiplies negative logits once per distinct token', () => {
    const s = new Sampler({ repetitionPenalty: 2 });
    s.sample(logits([2, -1, 0.5, 1]), [0, 1, 1]);
    expectClose(Array.from(s.logprobs).map(Math.exp), softmax([1, -2, 0.5, 1]), 1e-6);
    // window = last token only: token 0 is outside it
    const w = new Sampler({ repetitionPenalty: 2, repetitionContextSize: 1 });
    w.sample(logits([2, -1, 0.5, 1]), [0, 1, 1]);
    expectClose(Array.from(w.logprobs).map(Math.exp), softmax([2, -2, 0.5, 1]), 1e-6);
    // ids outside the vocabulary in the history are ignored
    const o = new Sampler({ repetitionPenalty: 2 });
    o.sample(logits([2, -1]), [5, -1, 1]);
    expectClose(Array.from(o.logprobs).map(Math.exp), softmax([2, -2]), 1e-6);
  });

  it('presence penalty subtracts once per distinct token, frequency penalty per occurrence', () => {
    const p = new Sampler({ presencePenalty: 0.5 });
    p.sample(logits([1, 1, 1, 1]), [0, 0, 3]);
    expectClose(Array.from(p.logprobs).map(Math.exp), softmax([0.5, 1, 1, 0.5]), 1e-6);
    const f = new Sampler({ frequencyPenalty: 0.5 });
    f.sample(logits([1, 1, 1, 1]), [0, 0, 3]);
    expectClose(Array.from(f.logprobs).map(Math.exp), softmax([0, 1, 1, 0.5]), 1e-6);
    const fw = new Sampler({ frequencyPenalty: 0.5, frequencyContextSize: 2 });
    fw.sample(logits([1, 1, 1, 1]), [0, 0, 3]);
    expectClose(Array.from(fw.logprobs).map(Math.exp), softmax([0.5, 1, 1, 0.5]), 1e-6);
  });

  it('applies bias, then repetition, then presence, then frequency', () => {
    // z0 = 1 → bias −2 → −1 → repetition ×2 (negative) → −2 → presence −0.5 → −2.5 → frequency −0.25·2 → −3
    const s = new Sampler({ logitBias: { 0: -2 }, repetitionPenalty: 2, presencePenalty: 0.5, frequencyPenalty: 0.25 });
    s.sample(logits([1, 0]), [0, 0]);
    expectClose(Array.from(s.logprobs).map(Math.exp), softmax([-3, 0]), 1e-6);
  });
});

describe('temperature and Gumbel-max sampling', () => {
  it('samples softmax(ℓ / T)', () => {
    const z = [0, ln(3), 1, -1, 0.5];
    const s1 = new Sampler({ temperature: 1, seed: 11 });
    expectClose(frequencies(s1, logits(z), N), softmax(z), TOL);
    const s2 = new Sampler({ temperature: 2, seed: 12 });
    expectClose(frequencies(s2, logits(z), N), softmax(z.map((v) => v / 2)), TOL);
    const s3 = new Sampler({ temperature: 0.5, seed: 13 });
    expectClose(frequencies(s3, logits(z), N), softmax(z.map((v) => v / 0.5)), TOL);
  });

  it('is exactly argmax(ℓ/T + G) with one uniform per finite token in id order', () => {
    // Reference: the textbook Gumbel-max with the same PRNG stream, no pruning.
    const V = 5000;
    const rng = makeRng(77);
    const raw = new Float32Array(V);
    for (let i = 0; i < V; i++) raw[i] = rng() * 30 - 25 + (i % 1000 === 7 ? 20 : 0);
    raw[123] = -Infinity;
    const T = 0.7;
    const sampler = new Sampler({ temperature: T, seed: 31337 });
    const ref = new Xoshiro128(31337);
    for (let step = 0; step < 200; step++) {
      const got = sampler.sample(raw).token;
      const lp = sampler.logprobs;
      let best = -Infinity;
      let want = -1;
      for (let i = 0; i < V; i++) {
        if (lp[i] === -Infinity) continue;
        const s = lp[i]! * (1 / T) - Math.log(-Math.log(ref.nextOpenUnit()));
        if (s > best) {
          best = s;
          want = i;
        }
      }
      expect(got, `step ${step}`).toBe(want);
    }
  });

  it('samplers interleaved on one vocabulary do not disturb each other (shared scratch)', () => {
    const rng = makeRng(3);
    const za = Float32Array.from({ length: 1000 }, () => rng() * 6);
    const zb = Float32Array.from({ length: 1000 }, () => rng() * 6);
    const optsA = { temperature: 0.9, topP: 0.9, seed: 1 };
    const optsB = { temperature: 1.2, topK: 50, repetitionPenalty: 1.3, seed: 2 };
    const hist = [1, 2, 3, 500];
    const alone = (opts: object, z: Float32Array): number[] => {
      const s = new Sampler(opts);
      return Array.from({ length: 50 }, () => s.sample(z, hist).token);
    };
    const a = new Sampler(optsA);
    const b = new Sampler(optsB);
    const ta: number[] = [];
    const tb: number[] = [];
    for (let i = 0; i < 50; i++) {
      ta.push(a.sample(za, hist).token);
      tb.push(b.sample(zb, hist).token);
    }
    expect(ta).toEqual(alone(optsA, za));
    expect(tb).toEqual(alone(optsB, zb));
    expect(a.logprobs).not.toBe(b.logprobs);
  });

  it('same seed ⇒ same tokens; reseed restarts the stream', () => {
    const z = logits([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]);
    const run = (s: Sampler): number[] => Array.from({ length: 200 }, () => s.sample(z).token);
    const a = new Sampler({ temperature: 1, seed: 2024 });
    const b = new Sampler({ temperature: 1, seed: 2024 });
    const first = run(a);
    expect(run(b)).toEqual(first);
    expect(run(new Sampler({ temperature: 1, seed: 2025 }))).not.toEqual(first);
    a.reseed(2024);
    expect(run(a)).toEqual(first);
    expect(a.seed).toBe(2024);
    expect(Number.isInteger(new Sampler({ temperature: 1 }).seed)).toBe(true);
  });
});

describe('filters (on untempered log-probabilities)', () => {
  const probs = [0.5, 0.3, 0.15, 0.05];
  const z = fromProbs(probs);

  it('top-p keeps the smallest head whose mass reaches top_p', () => {
    // (thresholds stay off the exact cumulative sums 0.5 / 0.8 / 0.95, where float rounding decides)
    expectClose(frequencies(new Sampler({ temperature: 1, topP: 0.75, seed: 1 }), z, N), [0.5 / 0.8, 0.3 / 0.8, 0, 0], TOL);
    expectClose(frequencies(new Sampler({ temperature: 1, topP: 0.85, seed: 2 }), z, N), [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0], TOL);
    expectClose(frequencies(new Sampler({ temperature: 1, topP: 0.4, seed: 3 }), z, 2000), [1, 0, 0, 0], 1e-12);
    // top_p = 1 is off
    expectClose(frequencies(new Sampler({ temperature: 1, topP: 1, seed: 4 }), z, N), probs, TOL);
  });

  it('top-p uses the untempered distribution (mlx-lm order, not HF)', () => {
    // At T = 10 the tempered distribution is nearly flat, but the kept set is still {0, 1}.
    const freq = frequencies(new Sampler({ temperature: 10, topP: 0.75, seed: 5 }), z, N);
    const t = softmax([ln(0.5) / 10, ln(0.3) / 10]);
    expectClose(freq, [t[0]!, t[1]!, 0, 0], TOL);
  });

  it('min-p drops tokens below min_p · p_max and honours min_tokens_to_keep', () => {
    // threshold 0.35 · 0.5 = 0.175 → {0, 1}
    expectClose(frequencies(new Sampler({ temperature: 1, minP: 0.35, seed: 6 }), z, N), [0.5 / 0.8, 0.3 / 0.8, 0, 0], TOL);
    expectClose(
      frequencies(new Sampler({ temperature: 1, minP: 0.35, minTokensToKeep: 3, seed: 7 }), z, N),
      [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0],
      TOL,
    );
    // min_p = 0.09 → threshold 0.045: token 3 (p = 0.05) stays; min_p = 0.11 → 0.055: it goes
    expectClose(frequencies(new Sampler({ temperature: 1, minP: 0.09, seed: 8 }), z, N), probs, TOL);
    expectClose(frequencies(new Sampler({ temperature: 1, minP: 0.11, seed: 8 }), z, N), [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0], TOL);
  });

  it('top-k keeps the k largest, ties towards lower ids', () => {
    expectClose(frequencies(new Sampler({ temperature: 1, topK: 2, seed: 9 }), z, N), [0.5 / 0.8, 0.3 / 0.8, 0, 0], TOL);
    expectClose(frequencies(new Sampler({ temperature: 1, topK: 3, seed: 10 }), z, N), [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0], TOL);
    const tied = frequencies(new Sampler({ temperature: 1, topK: 2, seed: 11 }), logits([1, 1, 1, 0]), N);
    expectClose(tied, [0.5, 0.5, 0, 0], TOL);
    // k ≥ vocab is off
    expectClose(frequencies(new Sampler({ temperature: 1, topK: 4, seed: 12 }), z, N), probs, TOL);
  });

  it('applies top-p, then min-p, then top-k', () => {
    // top-p 0.9 → {0,1,2}; min-p 0.2 (threshold 0.1) → {0,1,2}; top-k 2 → {0,1}
    expectClose(
      frequencies(new Sampler({ temperature: 1, topP: 0.9, minP: 0.2, topK: 2, seed: 13 }), z, N),
      [0.5 / 0.8, 0.3 / 0.8, 0, 0],
      TOL,
    );
    // top-p 0.6 → {0,1}; top-k 3 changes nothing
    expectClose(frequencies(new Sampler({ temperature: 1, topP: 0.6, topK: 3, seed: 14 }), z, N), [0.5 / 0.8, 0.3 / 0.8, 0, 0], TOL);
  });

  it('XTC removes the top choices above the threshold but the least probable of them', () => {
    // above 0.2: tokens 0 (0.5) and 1 (0.3); token 1 is the least probable of them and stays
    expectClose(
      frequencies(new Sampler({ temperature: 1, xtcProbability: 1, xtcThreshold: 0.2, seed: 15 }), z, N),
      [0, 0.3 / 0.5, 0.15 / 0.5, 0.05 / 0.5],
      TOL,
    );
    // exempt ids are never removed
    expectClose(
      frequencies(new Sampler({ temperature: 1, xtcProbability: 1, xtcThreshold: 0.2, xtcSpecialIds: [0], seed: 16 }), z, N),
      probs,
      TOL,
    );
    // fires with probability 0.5: p(token 0) = 0.5 · 0.5
    const half = frequencies(new Sampler({ temperature: 1, xtcProbability: 0.5, xtcThreshold: 0.2, seed: 17 }), z, N);
    expect(Math.abs(half[0]! - 0.25)).toBeLessThan(TOL);
  });

  it('matches brute-force sorting on a 262k random vocabulary', () => {
    const V = 262144;
    const rng = makeRng(5);
    const raw = new Float32Array(V);
    for (let i = 0; i < V; i++) raw[i] = (rng() - 0.5) * 8 + (i % 977 === 0 ? 12 : 0);
    const greedy = new Sampler();
    greedy.sample(raw);
    const lp = greedy.logprobs.slice();
    const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => lp[b]! - lp[a]! || a - b);
    const c = newCandidates(V);
    const set = (): number[] => Array.from(c.idx.subarray(0, c.n)).sort((a, b) => a - b);

    for (const topP of [0.3, 0.9, 0.999]) {
      resetCandidates(c);
      applyTopP(lp, c, topP);
      let before = 0;
      const expected: number[] = [];
      for (const t of order) {
        if (before >= topP) break;
        expected.push(t);
        before += Math.exp(lp[t]!);
      }
      expect(set(), `top_p ${topP}`).toEqual(expected.sort((a, b) => a - b));
    }
    for (const minP of [0.05, 0.5]) {
      resetCandidates(c);
      applyMinP(lp, c, minP, lp[order[0]!]!, 1);
      const threshold = lp[order[0]!]! + ln(minP);
      expect(set()).toEqual(order.filter((t) => lp[t]! >= threshold).sort((a, b) => a - b));
    }
    for (const k of [1, 40, 1000]) {
      resetCandidates(c);
      applyTopK(lp, c, k);
      expect(set()).toEqual(order.slice(0, k).sort((a, b) => a - b));
      expect([...topKIds(lp, null, V, k)].sort((a, b) => a - b)).toEqual(order.slice(0, k).sort((a, b) => a - b));
    }
  });

  // Speed is measured by the benches (never a wall-clock assertion in a test: the CI machine is shared);
  // this checks that every filter combination works at Gemma's vocabulary size with a long history.
  it('samples valid ids with finite logprobs on a 262k vocabulary', () => {
    const V = 262144;
    const rng = makeRng(8);
    const raw = new Float32Array(V);
    for (let i = 0; i < V; i++) raw[i] = (rng() - 0.5) * 10;
    const history = Array.from({ length: 4096 }, (_, i) => (i * 7919) % V);
    const configs = [
      { temperature: 0 },
      { temperature: 0.8, topP: 0.95, topK: 64, seed: 1 },
      { temperature: 0.7, minP: 0.05, repetitionPenalty: 1.1, seed: 2 },
    ];
    for (const options of configs) {
      const s = new Sampler(options);
      for (let i = 0; i < 3; i++) {
        const { token, logprob } = s.sample(raw, history);
        expect(Number.isInteger(token) && token >= 0 && token < V, JSON.stringify(options)).toBe(true);
        expect(Number.isFinite(logprob) && logprob <= 0, JSON.stringify(options)).toBe(true);
      }
    }
  });
});

describe('option validation', () => {
  it('names the bad field', () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ temperature: -1 }, /temperature/],
      [{ topP: 1.5 }, /topP/],
      [{ minP: -0.1 }, /minP/],
      [{ topK: 2.5 }, /topK/],
      [{ repetitionPenalty: 0 }, /repetitionPenalty/],
      [{ repetitionContextSize: 0 }, /repetitionContextSize/],
      [{ xtcThreshold: 0.7 }, /xtcThreshold/],
      [{ logitBias: { x: 1 } }, /logitBias/],
      [{ suppressedIds: [-3] }, /suppressedIds/],
      [{ seed: 1.5 }, /seed/],
    ];
    for (const [options, field] of bad) {
      expect(codeOf(() => new Sampler(options))).toBe('SAMPLER_OPTION_INVALID');
      expect(() => new Sampler(options)).toThrow(field);
    }
  });
});
