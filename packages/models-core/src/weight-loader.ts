/**
 * The one weight loader of every model package (Phi, Gemma text towers): reads tensors under a prefix
 * by their original names (so per-module quantization overrides keyed by path apply), recognises an MLX
 * quantized module by its `.scales` tensor, checks every shape against what the config implies, and
 * tallies the model's size figures (WeightStats) as modules load.
 */
import {
  Embedding, LayerNorm, Linear, MlxcelError, RMSNorm, loadVector, loadWeight, placeWeight, quantConfigOf,
  type FfnRole, type QuantConfig, type WeightStore,
} from '@mlxcel/tensor';
import { WeightStats } from './weight-stats.js';

export class WeightLoader {
  readonly stats = new WeightStats();

  constructor(
    readonly store: WeightStore,
    /** `quantization` / `quantization_config` block (global + per-path overrides), if any. */
    readonly quant: QuantConfig | undefined,
    /** Prefix of every path this loader reads (`model.language_model.`, or none). */
    readonly prefix = '',
  ) {}

  /**
   * A loader for `config`'s checkpoint: the quantization block comes from the config, else from the
   * store itself when it carries one (random-weight stores).
   */
  static forConfig(store: WeightStore, config: Record<string, unknown>, prefix = ''): WeightLoader {
    return new WeightLoader(store, quantConfigOf(config) ?? (store as { quantization?: QuantConfig }).quantization, prefix);
  }

  /** The stored name of `path`. */
  name(path: string): string {
    return this.prefix + path;
  }

  has(path: string): boolean {
    return this.store.has(this.prefix + path);
  }

  /**
   * `path.weight` as a Linear [out, in] (quantized iff `path.scales` exists), shape-checked. `bias`: the
   * config declares one (then `path.bias` [out] is required) or not (then a stored one is an error).
   */
  linear(path: string, shape: [number, number], opts: { bias?: boolean; ffn?: FfnRole } = {}): Linear {
    const l = this.linearAt(this.prefix + path, shape, opts.bias ?? false);
    return opts.ffn ? l.markFeedForward(opts.ffn) : l;
  }

  /** Like `linear` but null when `path.weight` is absent. */
  optLinear(path: string, shape: [number, number]): Linear | null {
    return this.has(`${path}.weight`) ? this.linear(path, shape) : null;
  }

  /**
   * `path.weight` as a Linear whose row count the caller validates (a width read from the checkpoint);
   * `cols` is checked. `ffn`: a feed-forward projection and its role (Linear.markFeedForward).
   */
  linearRows(path: string, cols: number, opts: { ffn?: FfnRole } = {}): Linear {
    const l = Linear.load(this.store, this.prefix + path, { quant: this.quant, bias: false });
    if (l.inFeatures !== cols)
      throw new MlxcelError('E_SHAPE', `${this.prefix}${path}.weight: ${l.inFeatures} input columns but the config implies ${cols}`);
    this.stats.streamed(l.weight);
    placeWeight(l.weight);
    return opts.ffn ? l.markFeedForward(opts.ffn) : l;
  }

  /** An embedding table [rows, dim] (quantized or not); one row is read per token. */
  embedding(path: string, shape: [number, number]): Embedding {
    const e = Embedding.load(this.store, this.prefix + path, { quant: this.quant });
    if (e.weight.rows !== shape[0] || e.weight.cols !== shape[1])
      throw new MlxcelError('E_SHAPE', `${this.prefix}${path}.weight: shape [${e.weight.shape.join(', ')}] but the config implies [${shape.join(', ')}]`);
    this.stats.partial(e.weight, 1 / e.weight.rows);
    return e;
  }

  /**
   * The LM head [vocab, hidden]: the embedding table when tied (plus `lm_head.bias` when the config
   * declares one), else the first of `paths` (default `lm_head`, read at the checkpoint root) that exists.
   */
  head(embed: Embedding, opts: { tied: boolean; shape: [number, number]; bias?: boolean; paths?: readonly string[] }): Linear {
    const bias = opts.bias ?? false;
    if (opts.tied) {
      this.stats.tiedHead(embed.weight); // the tied head streams the whole table per token
      placeWeight(embed.weight); // in place: the embedding reads the same copy
      if (!bias) return embed.asLinear();
      const b = loadVector(this.store, 'lm_head.bias', opts.shape[0]);
      this.stats.vector(b.length);
      return new Linear(embed.weight, b);
    }
    const path = (opts.paths ?? ['lm_head']).find((n) => this.store.has(`${n}.weight`));
    if (!path) throw new MlxcelError('E_MISSING_TENSOR', 'missing tensor lm_head.weight (tie_word_embeddings is false)');
    return this.linearAt(path, opts.shape, bias);
  }

  /** A full-scale RMSNorm `path.weight` [dim] (`y = x̂ · w`). */
  rmsNorm(path: string, dim: number, eps: number): RMSNorm {
    const n = RMSNorm.load(this.store, this.prefix + path, eps, { dim });
    this.stats.vector(dim);
    return n;
  }

  /** A LayerNorm with weight and bias [dim]. */
  layerNorm(path: string, dim: number, eps: number): LayerNorm {
    const n = LayerNorm.load(this.store, this.prefix + path, eps, { dim });
    this.stats.vector(2 * dim);
    return n;
  }

  /** A bare parameter `name` (no `.weight` suffix) [length], as f32. */
  vector(name: string, length: number): Float32Array {
    const v = loadVector(this.store, this.prefix + name, length);
    this.stats.vector(v.length);
    return v;
  }

  /** A small matrix `path.weight` as dense f32 [rows, cols] (dequantized when stored quantized). */
  dense(path: string, shape: [number, number]): Float32Array {
    const w = loadWeight(this.store, this.prefix + path, { quant: this.quant });
    if (w.rows !== shape[0] || w.cols !== shape[1])
      throw new MlxcelError('E_SHAPE', `${this.prefix}${path}.weight: shape [${w.rows}, ${w.cols}] but the config implies [${shape.join(', ')}]`);
    this.stats.vector(w.rows * w.cols);
    return w.quantized ? w.dequantize() : this.store.get(`${this.prefix}${path}.weight`).toF32().slice();
  }

  private linearAt(name: string, shape: [number, number], bias: boolean): Linear {
    if (!bias && this.store.has(`${name}.bias`))
      throw new MlxcelError('E_UNEXPECTED_TENSOR', `unexpected tensor ${name}.bias (the config declares no bias for this layer)`);
    const l = Linear.load(this.store, name, { quant: this.quant, bias, shape });
    this.stats.streamed(l.weight);
    placeWeight(l.weight); // streamed every token: resident (huge pages) where that is the placement
    if (l.bias) this.stats.vector(l.bias.length);
    return l;
  }
}
