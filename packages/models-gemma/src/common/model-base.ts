/**
 * The LanguageModel skeleton shared by Gemma 3n and Gemma 4: identity fields, the KV cache layout,
 * states, and forward = lay out the batch → the architecture's hidden rows → norm + head (+ soft-cap)
 * → advance each state. Each architecture supplies `hidden` (embedding, per-layer inputs, layers).
 */
import {
  isNonFiniteFailure, locateNonFinite, NO_PROBE, NonFiniteError, nonFiniteLogitsError, nonFiniteReport, type MlxcelError,
  type FiniteProbe, type ForwardOptions, type LanguageModel, type Linear, type RMSNorm, type StateOptions,
} from '@mlxcel/tensor';
import { layoutBatch, type BatchLayout, type GemmaForwardInput } from './batch.js';
import { LmHead } from './head.js';
import type { LayerType } from './layer-types.js';
import { GemmaState, type CacheLayout } from './state.js';

/** The config fields the skeleton reads (both families' parsed configs have them). */
export interface GemmaBaseConfig {
  modelType: string;
  vocabSize: number;
  numLayers: number;
  hiddenSize: number;
  maxPositionEmbeddings: number;
  finalLogitSoftcapping: number | null;
  layerTypes: LayerType[];
  slidingWindow: number;
  kvSources: number[];
}

export abstract class GemmaModelBase implements LanguageModel {
  readonly modelType: string;
  readonly vocabSize: number;
  readonly numLayers: number;
  readonly hiddenSize: number;
  readonly maxContext: number;
  readonly prefillChunk = 256;
  readonly stats: { parameters: number; weightBytes: number };
  private readonly head: LmHead;
  private readonly cacheLayout: CacheLayout;
  /** Check points in `hidden` call `this.probe.check(...)`: a no-op except while locating NaN/Inf. */
  protected probe: FiniteProbe = NO_PROBE;

  protected constructor(
    readonly config: Readonly<Record<string, unknown>>,
    cfg: GemmaBaseConfig,
    w: { norm: RMSNorm; head: Linear; tally: { parameters: number; weightBytes: number } },
    /** KV heads and head dim of every layer. */
    kv: { nKvHeads: readonly number[]; headDims: readonly number[] },
  ) {
    this.modelType = cfg.modelType;
    this.vocabSize = cfg.vocabSize;
    this.numLayers = cfg.numLayers;
    this.hiddenSize = cfg.hiddenSize;
    this.maxContext = cfg.maxPositionEmbeddings;
    this.head = new LmHead(w.norm, w.head, cfg.finalLogitSoftcapping);
    this.stats = { parameters: w.tally.parameters, weightBytes: w.tally.weightBytes };
    this.cacheLayout = {
      types: cfg.layerTypes,
      nKvHeads: kv.nKvHeads,
      headDims: kv.headDims,
      slidingWindow: cfg.slidingWindow,
      sources: cfg.kvSources,
    };
  }

  /** Final hidden rows [b.n, hidden] of the batch (before the output norm). */
  protected abstract hidden(b: BatchLayout): Float32Array;

  newState(opts?: StateOptions): GemmaState {
    return new GemmaState(this.cacheLayout, opts);
  }

  suppressedTokenIds(): Int32Array {
    return new Int32Array(0);
  }

  private isState = (s: unknown): s is GemmaState => s instanceof GemmaState && s.layout === this.cacheLayout;

  forward(batch: GemmaForwardInput[], opts: ForwardOptions = {}): Float32Array[] {
    const b = layoutBatch(batch, this.isState);
    let logits: Float32Array[];
    try {
      logits = this.head.forward(this.hidden(b), b, opts.logits ?? 'all');
    } catch (e) {
      if (!isNonFiniteFailure(e) || this.probe !== NO_PROBE) throw e;
      throw this.locate(batch, b, e, opts.logits ?? 'all');
    }
    for (const s of b.seqs) s.state.advance(s.len);
    return logits;
  }

  /**
   * Non-finite logits: re-run the same rows once on fresh states with the probe active (the live
   * states' caches already hold this step's keys, so they cannot be re-run) and name where NaN/Inf
   * first appear. The failing step does not advance any state.
   */
  private locate(batch: GemmaForwardInput[], b: BatchLayout, e: MlxcelError, which: 'all' | 'last'): Error {
    const V = this.vocabSize;
    // The head projected one row per sequence ('last') or every row ('all'): find the first bad row's sequence.
    const row = e instanceof NonFiniteError ? Math.floor(e.index / V) : 0;
    let seq = 0;
    if (which === 'last') seq = row;
    else while (seq < b.seqs.length - 1 && row >= b.seqs[seq]!.start + b.seqs[seq]!.len) seq++;
    const firstAt = locateNonFinite((probe) => {
      this.probe = probe;
      try {
        const fresh = batch.map((x) => ({ ...x, state: this.newState() }));
        const fb = layoutBatch(fresh, this.isState);
        this.head.forward(this.hidden(fb), fb, 'last');
      } finally {
        this.probe = NO_PROBE;
      }
    });
    const at = firstAt === 'logits' ? 'the LM head output (logits)' : firstAt;
    if (!(e instanceof NonFiniteError)) return nonFiniteReport(this.modelType, e.message, at);  // a router saw NaN
    return nonFiniteLogitsError(this.modelType, seq, e.index % V, e.value, at);
  }
}
