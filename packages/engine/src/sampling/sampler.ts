import { logSoftmax } from '@mlxcel/core-native';
import { MlxcelError } from '../errors.js';
import {
  type Candidates,
  applyMinP,
  applyTopK,
  applyTopP,
  applyXtc,
  newCandidates,
  resetCandidates,
} from './filters.js';
import { type ResolvedSamplerOptions, type SamplerOptions, resolveSamplerOptions } from './options.js';
import {
  PenaltyScratch,
  applyFrequencyPenalty,
  applyPresencePenalty,
  applyRepetitionPenalty,
} from './penalties.js';
import { Xoshiro128, randomSeed } from './prng.js';

/**
 * Working buffers shared by all samplers of one vocabulary size. `sample` is synchronous,
 * so samplers never use them at the same time; sharing keeps a batch of many sequences
 * from holding ~5 MiB of scratch each at a 262k vocabulary.
 */
interface SharedScratch {
  candidates: Candidates;
  uniforms: Float64Array;
  penalties: PenaltyScratch;
}
const sharedScratch = new Map<number, SharedScratch>();

function scratchFor(vocab: number): SharedScratch {
  let s = sharedScratch.get(vocab);
  if (s === undefined) {
    s = { candidates: newCandidates(vocab), uniforms: new Float64Array(vocab), penalties: new PenaltyScratch() };
    sharedScratch.set(vocab, s);
  }
  return s;
}

/** Sets z[t] = −∞ for every token whose bit in `allowed` is clear (ids past the mask too). */
function applyMask(z: Float32Array, allowed: Uint32Array): void {
  const V = z.length;
  for (let w = 0; w < allowed.length; w++) {
    const bits = allowed[w]!;
    if (bits === 0xffffffff) continue;
    const base = w << 5;
    const end = Math.min(V, base + 32);
    for (let i = base; i < end; i++) if (!(bits & (1 << (i - base)))) z[i] = -Infinity;
  }
  for (let i = allowed.length << 5; i < V; i++) z[i] = -Infinity;
}

/** The largest Gumbel value a uniform from `nextOpenUnit` can give: −ln(−ln(1 − 2^−33)), rounded up. */
const GUMBEL_MAX = 23;

export interface SampleResult {
  token: number;
  /**
   * log p(token) after the logits processors and before the filters and temperature
   * (step 2: what mlx-lm reports as the token's logprob).
   */
  logprob: number;
}

/**
 * Picks the next token from a row of logits, exactly in the order of docs/architecture/formats.md (e),
 * which is mlx-lm's order:
 *
 * 0. suppressed ids → −∞ (so they are excluded from penalties, logprobs, greedy and sampling);
 * 1. logit bias, then repetition, presence and frequency penalties over the history
 *    (HF-like: the caller passes the whole prompt + generated history; each penalty can be
 *    limited to a window of the last N tokens);
 * 2. log-softmax ℓ = z − logsumexp(z) (temperature not applied);
 * 3. temperature 0 → argmax ℓ (first id on ties), no filters;
 * 4. filters on the untempered ℓ, in order: top-p, min-p, XTC, top-k;
 * 5. Gumbel-max: argmax over survivors of ℓ/T + G, G = −ln(−ln U), U from a seeded
 *    xoshiro128** — same seed and same logits ⇒ same tokens.
 *
 * Note this is not Hugging Face's warper order (temperature → top-k → top-p → min-p on
 * tempered, progressively masked distributions).
 *
 * Cost: O(V) passes over the logits; no full sort (top-p collects only the head of the
 * distribution). Vocab-sized buffers are allocated once: the log-probs per sampler, the
 * working buffers shared by all samplers of a vocabulary size. Make one sampler per
 * sequence (each has its own seed stream and `logprobs`).
 */
export class Sampler {
  readonly options: Readonly<ResolvedSamplerOptions>;
  /** The seed in use (the given one, or the random one drawn at construction). */
  readonly seed: number;

  private readonly rng: Xoshiro128;
  private readonly suppressed: Int32Array;
  private readonly xtcSpecial: ReadonlySet<number>;
  /**
   * Whether the options edit the logits before the log-softmax (suppression, bias, penalties); if not
   * and no allowed-token mask is given, the log-softmax reads them where they are instead of from a copy
   * (a 1 MiB copy per sequence and token over a 262k vocabulary: most of the sampler's own time in a
   * batched decode step's CPU profile).
   */
  private readonly optionsEditLogits: boolean;
  /** Log-probabilities of the last call (per sampler, so `logprobs` stays valid). */
  private lp = new Float32Array(0);

  constructor(options: SamplerOptions = {}) {
    this.options = resolveSamplerOptions(options);
    this.seed = this.options.seed ?? randomSeed();
    this.rng = new Xoshiro128(this.seed);
    this.suppressed = Int32Array.from(this.options.suppressedIds);
    this.xtcSpecial = new Set(this.options.xtcSpecialIds);
    const o = this.options;
    this.optionsEditLogits = this.suppressed.length > 0 || o.logitBias.length > 0 ||
      o.repetitionPenalty !== 1 || o.presencePenalty !== 0 || o.frequencyPenalty !== 0;
  }

  /** Restart the random stream (e.g. per request). */
  reseed(seed: number): void {
    this.rng.reseed(seed);
  }

  /**
   * The log-probabilities (step 2) of the last `sample` call. A view into a reusable
   * buffer: valid until the next call; copy it to keep it.
   */
  get logprobs(): Float32Array {
    return this.lp;
  }

  /**
   * Choose the next token.
   * @param logits  the last position's logits, length V (not modified)
   * @param history tokens so far (prompt + generated) for the penalties; may be omitted
   *                when no penalty is configured
   * @param allowed  optional vocabulary mask (bit t of word t>>5 set = token t allowed), applied
   *                right after the suppressed ids: a constrained step samples among the allowed
   *                tokens with every option still in force; logprobs are then over the allowed set
   */
  sample(logits: Float32Array, history: ArrayLike<number> = [], allowed?: Uint32Array): SampleResult {
    const V = logits.length;
    if (V === 0) throw new MlxcelError('SAMPLER_EMPTY_LOGITS', 'cannot sample from an empty logits row');
    if (this.lp.length !== V) this.lp = new Float32Array(V);
    const scratch = scratchFor(V);
    const z = this.lp;
    const o = this.options;
    const sup = this.suppressed;
    const edits = this.optionsEditLogits || !!allowed;
    if (edits) z.set(logits);

    // 0. suppression
    for (let i = 0; i < sup.length; i++) if (sup[i]! < V) z[sup[i]!] = -Infinity;
    if (allowed) applyMask(z, allowed);
    // 1. processors
    for (const [id, b] of o.logitBias) if (id < V) z[id]! += b;
    const pen = scratch.penalties;
    if (o.repetitionPenalty !== 1) applyRepetitionPenalty(z, history, o.repetitionPenalty, o.repetitionContextSize, pen);
    if (o.presencePenalty !== 0) applyPresencePenalty(z, history, o.presencePenalty, o.presenceContextSize, pen);
    if (o.frequencyPenalty !== 0) applyFrequencyPenalty(z, history, o.frequencyPenalty, o.frequencyContextSize, pen);

    // 2. log-softmax into z, natively (SIMD exp, both cores, block sums added in double): over a
    // 262k vocabulary the JS loop (Math.exp per logit) took ~4 ms a token, 0.12 ms this way, and a
    // batched step runs it once per sequence.
    const { max, argmax, firstNaN } = logSoftmax(edits ? z : logits, z);
    if (firstNaN >= 0) throw new MlxcelError('SAMPLER_NAN_LOGITS', `logits contain NaN (first at id ${firstNaN})`);
    if (argmax < 0 || max === Infinity) {
      throw new MlxcelError(
        'SAMPLER_NO_TOKEN',
        max === Infinity ? 'logits contain +Infinity' : 'every token is suppressed or has −∞ logit: nothing can be sampled',
      );
    }
    const lp = z;
    const maxLp = lp[argmax]!;

    // 3. greedy
    if (o.temperature === 0) return { token: argmax, logprob: maxLp };

    // 4. filters
    const c = scratch.candidates;
    resetCandidates(c);
    if (o.topP > 0 && o.topP < 1) applyTopP(lp, c, o.topP);
    if (o.minP > 0) applyMinP(lp, c, o.minP, maxLp, o.minTokensToKeep);
    if (o.xtcProbability > 0 && this.rng.nextOpenUnit() <= o.xtcProbability) applyXtc(lp, c, o.xtcThreshold, this.xtcSpecial);
    if (o.topK > 0) applyTopK(lp, c, o.topK);

    // 5. Gumbel-max over the survivors: uniforms are drawn in bulk (one per survivor, in
    // id order for `all`, list order otherwise) into a reusable buffer.
    const invT = 1 / o.temperature;
    let best = -Infinity;
    let token = -1;
    const u = scratch.uniforms;
    if (c.all) {
      let n = 0;
      for (let i = 0; i < V; i++) if (lp[i]! > -Infinity) c.idx[n++] = i;
      c.n = n;
    }
    const idx = c.idx;
    const n = c.n;
    this.rng.fillOpenUnit(u, n);
    // Pruning that cannot change the winner: G ≤ G_MAX for every uniform we draw, so a
    // token with ℓ/T + G_MAX < (score of the most probable survivor) can never win and its
    // logarithms are skipped. With real LLM logits this skips almost the whole vocabulary.
    let top = 0;
    for (let j = 1; j < n; j++) if (lp[idx[j]!]! > lp[idx[top]!]!) top = j;
    const cutoff = lp[idx[top]!]! * invT - Math.log(-Math.log(u[top]!)) - GUMBEL_MAX;
    for (let j = 0; j < n; j++) {
      const i = idx[j]!;
      const scaled = lp[i]! * invT;
      if (scaled < cutoff) continue;
      const score = scaled - Math.log(-Math.log(u[j]!));
      if (score > best) {
        best = score;
        token = i;
      }
    }
    // Cannot happen (every filter keeps at least one finite token); guard against a broken invariant.
    if (token < 0) token = argmax;
    return { token, logprob: lp[token]! };
  }
}
