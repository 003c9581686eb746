/**
 * Loading the text tower from any supported layout. The tower's tensors live under one prefix
 * (docs/architecture/gemma-common.md §9): HF multimodal `model.language_model.`, mlx-vlm / mlx-lm Gemma 4
 * `language_model.model.`, `language_model.`, HF text-only `model.`, or none. Tensors are always read
 * by their original names so that per-module quantization overrides (keyed by original path) apply.
 */
import {
  Embedding, Linear, MlxcelError, RMSNorm, Weight, loadVector, loadWeight, quantConfigOf,
  type QuantConfig, type WeightStore,
} from '@mlxcel/tensor';

export const TEXT_PREFIXES = ['model.language_model.', 'language_model.model.', 'language_model.', 'model.', ''] as const;

/** Counts parameters and the bytes streamed per token, as modules are loaded. */
export class Tally {
  parameters = 0;
  weightBytes = 0;
  addWeight(w: Weight, streamed = true): void {
    this.parameters += w.shape.reduce((a, b) => a * b, 1);
    if (streamed) this.weightBytes += w.nbytes;
  }
  addVector(v: Float32Array): void {
    this.parameters += v.length;
  }
}

export class TowerLoader {
  readonly quant: QuantConfig | undefined;
  readonly tally = new Tally();

  private constructor(readonly store: WeightStore, readonly prefix: string, quant: QuantConfig | undefined) {
    this.quant = quant;
  }

  /**
   * Finds the text-tower prefix (the first whose `embed_tokens.weight` exists). The quantization
   * block comes from the config, else from the store itself when it carries one (random stores).
   */
  static open(store: WeightStore, config: Record<string, unknown>): TowerLoader {
    const prefix = TEXT_PREFIXES.find((p) => store.has(`${p}embed_tokens.weight`));
    if (prefix === undefined)
      throw new MlxcelError(
        'E_MISSING_TENSOR',
        `missing tensor embed_tokens.weight: looked for ${TEXT_PREFIXES.map((p) => `"${p}embed_tokens.weight"`).join(', ')}`,
      );
    const q = quantConfigOf(config) ?? (store as { quantization?: QuantConfig }).quantization;
    return new TowerLoader(store, prefix, q);
  }

  name(path: string): string {
    return this.prefix + path;
  }

  has(path: string): boolean {
    return this.store.has(this.prefix + path);
  }

  /** `path.weight` as a Linear [out, in] (quantized iff `path.scales` exists), shape-checked. */
  linear(path: string, shape: [number, number]): Linear {
    const l = Linear.load(this.store, this.prefix + path, { quant: this.quant, bias: false, shape });
    this.tally.addWeight(l.weight);
    return l;
  }

  /**
   * The LM head: the tied embedding table, or `lm_head.weight` (at the root or under
   * `language_model.`) when tie_word_embeddings is false.
   */
  head(embed: Embedding, tied: boolean, shape: [number, number]): Linear {
    if (tied) {
      this.tally.weightBytes += embed.weight.nbytes; // the tied head streams the whole table per token
      return embed.asLinear();
    }
    const path = ['lm_head', 'language_model.lm_head'].find((n) => this.store.has(`${n}.weight`));
    if (!path) throw new MlxcelError('E_MISSING_TENSOR', 'missing tensor lm_head.weight (tie_word_embeddings is false)');
    const l = Linear.load(this.store, path, { quant: this.quant, bias: false, shape });
    this.tally.addWeight(l.weight);
    return l;
  }

  /** `path.weight` as a Linear whose row count the caller validates (derived sizes); `cols` is checked. */
  linearRows(path: string, cols: number): Linear {
    const l = Linear.load(this.store, this.prefix + path, { quant: this.quant, bias: false });
    if (l.inFeatures !== cols)
      throw new MlxcelError('E_SHAPE', `${this.prefix}${path}.weight: ${l.inFeatures} input columns but the config implies ${cols}`);
    this.tally.addWeight(l.weight);
    return l;
  }

  /** Like `linear` but null when `path.weight` is absent. */
  optLinear(path: string, shape: [number, number]): Linear | null {
    return this.has(`${path}.weight`) ? this.linear(path, shape) : null;
  }

  /** An embedding table [rows, dim]; only one row per token is read, so it adds no streamed bytes. */
  embedding(path: string, shape: [number, number]): Embedding {
    const e = Embedding.load(this.store, this.prefix + path, { quant: this.quant });
    if (e.weight.rows !== shape[0] || e.weight.cols !== shape[1])
      throw new MlxcelError(
        'E_SHAPE',
        `${this.prefix}${path}.weight: shape [${e.weight.rows}, ${e.weight.cols}] but the config implies [${shape.join(', ')}]`,
      );
    this.tally.addWeight(e.weight, false);
    return e;
  }

  /** A full-scale RMSNorm (`y = x̂ · w`, never `1 + w`; docs/architecture/gemma-common.md §1). */
  norm(path: string, dim: number, eps: number): RMSNorm {
    const n = RMSNorm.load(this.store, this.prefix + path, eps, { dim });
    this.tally.addVector(n.weight!);
    return n;
  }

  /** A bare parameter (no `.weight` suffix), as f32. */
  vector(name: string, length: number): Float32Array {
    const v = loadVector(this.store, this.prefix + name, length);
    this.tally.addVector(v);
    return v;
  }

  /** A small matrix as dense f32 [rows, cols] (dequantized when stored quantized). */
  dense(path: string, shape: [number, number]): Float32Array {
    const w = loadWeight(this.store, this.prefix + path, { quant: this.quant });
    if (w.rows !== shape[0] || w.cols !== shape[1])
      throw new MlxcelError('E_SHAPE', `${this.prefix}${path}.weight: shape [${w.rows}, ${w.cols}] but the config implies [${shape.join(', ')}]`);
    this.tally.addWeight(w, false);
    return w.quantized ? w.dequantize() : this.store.get(`${this.prefix}${path}.weight`).toF32().slice();
  }
}
