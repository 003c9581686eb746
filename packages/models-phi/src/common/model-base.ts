/**
 * The LanguageModel skeleton shared by the three Phi architectures: batching, regime planning,
 * output-row selection and state bookkeeping live here; each architecture supplies the embedding, the
 * decoder layer and the output head.
 */
import { RopeTableCache, type RopeSpec } from '@mlxcel/rope';
import {
  firstNonFinite, isNonFiniteFailure, locateNonFinite, NO_PROBE, NonFiniteError, nonFiniteLogitsError, nonFiniteReport,
  type MlxcelError,
  type FiniteProbe, type ForwardInput, type ForwardOptions, type LanguageModel, type SequenceState, type StateOptions,
} from '@mlxcel/tensor';
import { commitBatch, gatherRows, outputRows, planBatch, type Plan } from './batch.js';
import { makeLayerCache, type LayerCacheSpec } from './caches.js';
import { PhiSequence } from './sequence.js';

export interface ModelBaseParams {
  modelType: string;
  family: string;
  config: Readonly<Record<string, unknown>>;
  vocabSize: number;
  numLayers: number;
  hiddenSize: number;
  maxContext: number;
  rope: RopeSpec;
  /** KV geometry and window of every layer. */
  layerCaches: LayerCacheSpec[];
  prefillChunk: number | null;
  stats: { parameters: number; weightBytes: number };
}

/** The ModelBaseParams every Phi config.json spells the same way (HF key names). */
export function configParams(cfg: {
  vocab_size: number; num_hidden_layers: number; hidden_size: number; max_position_embeddings: number; rope: RopeSpec;
}): Pick<ModelBaseParams, 'vocabSize' | 'numLayers' | 'hiddenSize' | 'maxContext' | 'rope'> {
  return {
    vocabSize: cfg.vocab_size, numLayers: cfg.num_hidden_layers, hiddenSize: cfg.hidden_size,
    maxContext: cfg.max_position_embeddings, rope: cfg.rope,
  };
}

export abstract class PhiModelBase implements LanguageModel {
  readonly modelType: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly vocabSize: number;
  readonly numLayers: number;
  readonly hiddenSize: number;
  readonly maxContext: number;
  readonly prefillChunk: number | null;
  readonly stats: { parameters: number; weightBytes: number };
  readonly rope: RopeSpec;
  protected readonly family: string;
  private readonly tables: RopeTableCache;
  private readonly layerCaches: LayerCacheSpec[];
  /** Layer-boundary check points: a no-op except while locating NaN/Inf (see forward). */
  private probe: FiniteProbe = NO_PROBE;

  protected constructor(p: ModelBaseParams) {
    this.modelType = p.modelType;
    this.family = p.family;
    this.config = p.config;
    this.vocabSize = p.vocabSize;
    this.numLayers = p.numLayers;
    this.hiddenSize = p.hiddenSize;
    this.maxContext = p.maxContext;
    this.prefillChunk = p.prefillChunk;
    this.stats = p.stats;
    this.rope = p.rope;
    this.tables = new RopeTableCache(p.rope);
    this.layerCaches = p.layerCaches;
  }

  /** Row-major [ids.length, hidden] embeddings (any input scaling included). */
  protected abstract embed(ids: Int32Array): Float32Array;
  /** One decoder layer over all rows of the plan, updating `h` in place. */
  protected abstract layer(index: number, h: Float32Array, plan: Plan): void;
  /** Final norm + output head (+ any output scaling) on `rows` gathered hidden rows: [rows, vocab]. */
  protected abstract head(x: Float32Array, rows: number): Float32Array;

  newState(opts: StateOptions = {}): SequenceState {
    const kind = opts.kvCache;
    // PhiSequence builds its caches at once, so an unavailable kind fails here, not on first use.
    const make = () => this.layerCaches.map((spec) => makeLayerCache(spec, kind));
    return new PhiSequence(this, make);
  }

  suppressedTokenIds(): Int32Array {
    return new Int32Array(0);
  }

  forward(batch: ForwardInput[], opts: ForwardOptions = {}): Float32Array[] {
    const plan = planBatch(batch, {
      owner: this, family: this.family, vocabSize: this.vocabSize, rope: this.rope, tables: this.tables, maxContext: this.maxContext,
    });
    let logits: Float32Array;
    let counts: number[];
    try {
      const h = this.embed(plan.ids);
      this.probe.check('the embedding (embed_tokens)', h);
      for (let l = 0; l < this.numLayers; l++) {
        this.layer(l, h, plan);
        this.probe.check(`layer ${l} output (layers.${l}.*)`, h);
      }
      const out = outputRows(plan, opts.logits ?? 'all');
      counts = out.counts;
      logits = this.head(gatherRows(h, this.hiddenSize, out.rows), out.rows.length);
      // The only per-step check: one pass over the logits rows (see @mlxcel/tensor finite.ts).
      const bad = firstNonFinite(logits);
      if (bad >= 0) throw new NonFiniteError('logits', bad, logits[bad]!, 'E_NONFINITE_LOGITS');
    } catch (e) {
      // Some layers may already hold this step's keys: rebuild these sequences from their ids next time.
      for (const r of plan.runs) r.seq.stale = true;
      if (isNonFiniteFailure(e) && this.probe === NO_PROBE) throw this.locate(batch, e);
      throw e;
    }
    commitBatch(plan);
    const V = this.vocabSize;
    const result: Float32Array[] = [];
    let row = 0;
    for (const c of counts) {
      result.push(logits.subarray(row * V, (row + c) * V));
      row += c;
    }
    return result;
  }

  /** Non-finite logits: re-run the batch's new rows once on fresh states with the probe on, name where NaN/Inf appear. */
  private locate(batch: ForwardInput[], e: MlxcelError): Error {
    const firstAt = locateNonFinite((probe) => {
      this.probe = probe;
      try {
        this.forward(batch.map((x) => ({ ...x, state: this.newState() })), { logits: 'last' });
      } finally {
        this.probe = NO_PROBE;
      }
    });
    const V = this.vocabSize;
    // Sequence of the first bad row: the row count per sequence is not at hand here, so name the row.
    const at = firstAt === 'logits' ? 'the LM head output (logits)' : firstAt;
    if (!(e instanceof NonFiniteError)) return nonFiniteReport(this.modelType, e.message, at);  // the router saw NaN
    return nonFiniteLogitsError(this.modelType, Math.floor(e.index / V), e.index % V, e.value, at);
  }
}
