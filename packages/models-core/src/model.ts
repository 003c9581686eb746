/**
 * The LanguageModel skeleton every architecture extends. forward() = lay out the batch (the family
 * validates and places the rows) → `finalHiddenStates` (the architecture's forward pass: embed → every
 * decoder layer, written top to bottom in its model.ts) → the shared LM head on the returned rows →
 * commit each sequence's state. A failed pass calls `abandon` so a family can mark states whose
 * caches already hold part of the step.
 */
import {
  assertFinite, isNonFiniteFailure, locateNonFinite, NonFiniteError, nonFiniteReport, withLayerArenas,
  type ForwardInput, type ForwardOptions, type LanguageModel, type MlxcelError, type SequenceState, type StateOptions,
} from '@mlxcel/tensor';
import type { BatchLayout } from './batch.js';
import type { LmHead } from './head.js';

/**
 * Receives each named intermediate of a forward pass over all rows of the batch: `embeddings` and
 * `hidden_states.<layer>` (the residual stream after layer `layer`, 0-based), each [rows, width].
 * `mlxcel trace --dump-layers` writes them next to the logits.
 */
export type HiddenStateTap = (name: string, values: Float32Array, width: number) => void;

/** The trace name of layer `l`'s output (HF `output_hidden_states` index l + 1). */
export const layerOutputName = (l: number): string => `hidden_states.${l}`;
export const EMBEDDINGS_NAME = 'embeddings';

/**
 * The layer loop of every forward file: `layer(l, x)` for l = 0 … numLayers − 1 in order, the residual
 * tapped as `hidden_states.<l>` after each (`view` picks the [rows, width] tensor to tap — Gemma 3n's
 * active AltUp stream). Large arrays a layer makes come from the layer arenas (@mlxcel/tensor
 * `withLayerArenas`): valid through the next layer, reused after that.
 */
export function runLayers<X>(
  x: X, numLayers: number, layer: (l: number, x: X) => X, tap: HiddenStateTap | undefined, width: number,
  view: (x: X) => Float32Array = (v) => v as unknown as Float32Array,
): X {
  return withLayerArenas((nextLayer) => {
    for (let l = 0; l < numLayers; l++) {
      nextLayer();
      x = layer(l, x);
      tap?.(layerOutputName(l), view(x), width);
    }
    return x;
  });
}

/** What a model states about itself (the LanguageModel fields a DecoderModel is constructed with). */
export type ModelIdentity = Pick<
  LanguageModel, 'modelType' | 'config' | 'vocabSize' | 'numLayers' | 'hiddenSize' | 'maxContext' | 'prefillChunk' | 'stats'
>;

export abstract class DecoderModel<S extends SequenceState, L extends BatchLayout<{ start: number; len: number; newLen: number }>>
  implements LanguageModel
{
  readonly modelType: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly vocabSize: number;
  readonly numLayers: number;
  readonly hiddenSize: number;
  readonly maxContext: number;
  readonly prefillChunk: number | null;
  readonly stats: { parameters: number; weightBytes: number };

  protected constructor(id: ModelIdentity, private readonly lmHead: LmHead) {
    this.modelType = id.modelType;
    this.config = id.config;
    this.vocabSize = id.vocabSize;
    this.numLayers = id.numLayers;
    this.hiddenSize = id.hiddenSize;
    this.maxContext = id.maxContext;
    this.prefillChunk = id.prefillChunk;
    this.stats = id.stats;
  }

  abstract newState(opts?: StateOptions): S;

  /** Validates the batch (models-core checkBatch) and places each sequence's rows. */
  protected abstract layoutBatch(batch: readonly ForwardInput[]): L;

  /** The forward pass: embed → every decoder layer → the final hidden rows [layout.n, hidden] the LM head reads (before its norm). */
  protected abstract finalHiddenStates(layout: L, tap: HiddenStateTap | undefined): Float32Array;

  /** After a successful pass: advance / record each sequence's state. */
  protected abstract commit(layout: L): void;

  /** After a failed pass (some caches may already hold this step's keys). Default: nothing. */
  protected abandon(_layout: L): void {}

  suppressedTokenIds(): Int32Array {
    return new Int32Array(0);
  }

  forward(batch: ForwardInput[], opts: ForwardOptions = {}): Float32Array[] {
    const layout = this.layoutBatch(batch);
    if (opts.logitsOut !== undefined) this.lmHead.checkLogitsOut(layout, opts.logits ?? 'all', opts.logitsOut);
    let logits: Float32Array[];
    try {
      const h = this.finalHiddenStates(layout, opts.onHiddenState);
      logits = this.lmHead.forward(h, layout, opts.logits ?? 'all', opts.logitsOut);
    } catch (e) {
      this.abandon(layout);
      if (isNonFiniteFailure(e) && !this.locating) throw this.locateNonFinite(batch, e);
      throw e;
    }
    this.commit(layout);
    return logits;
  }

  private locating = false;

  /**
   * NaN/Inf reached the logits (or an MoE router): re-run the same new ids once on fresh states with
   * every layer's output checked (the hidden-state tap), and name where non-finite values first appear.
   * The failing step committed nothing; the live states cannot be re-run (their caches hold part of it).
   */
  private locateNonFinite(batch: ForwardInput[], e: MlxcelError): MlxcelError {
    const where = (name: string) =>
      name === EMBEDDINGS_NAME ? 'the embedding (embed_tokens)'
        : /^hidden_states\.(\d+)$/.test(name) ? `layer ${name.slice(14)} output (layers.${name.slice(14)}.*)` : name;
    const firstAt = locateNonFinite(() => {
      this.locating = true;
      try {
        const fresh = batch.map((x) => ({ ...x, state: this.newState() }));
        const layout = this.layoutBatch(fresh);
        const h = this.finalHiddenStates(layout, (name, values) => assertFinite(where(name), values));
        this.lmHead.forward(h, layout, 'last');
      } finally {
        this.locating = false;
      }
    });
    const at = firstAt !== null && firstAt.startsWith('the logits') ? 'the LM head output (logits)' : firstAt;
    const what = e instanceof NonFiniteError ? `${e.where} hold ${e.value} (first at vocabulary id ${e.index})` : e.message;
    return nonFiniteReport(this.modelType, what, at);
  }
}
