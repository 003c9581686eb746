/**
 * Phi-3-small forward pass (phi3small.md §3–§5): embeddings × mup_embedding_multiplier, pre-LayerNorm
 * layers with biased grouped QKV, dense or block-sparse attention (HF layer rule) with scale
 * mup_attn_multiplier / D under muP, GeGELU MLP, final LayerNorm, tied head ÷ mup_width_multiplier.
 * Logits stay raw: the 91 dummy ids are declared by suppressedTokenIds() for the sampler (§6).
 */
import { ops, type WeightStore } from '@mlxcel/tensor';
import { gegelu } from '../common/activations.js';
import { attendRuns, type AttentionGeometry, type MaskBuilder } from '../common/attention.js';
import type { Plan, Run } from '../common/batch.js';
import { configParams, PhiModelBase } from '../common/model-base.js';
import { blockSparseMask, type BlockSparseSpec } from './blocksparse.js';
import { isDenseLayer, parsePhi3SmallConfig, type Phi3SmallConfig } from './config.js';
import { dummyTokenIds } from './dummy.js';
import { splitGroupedQkv } from './qkv.js';
import { loadPhi3SmallWeights, type Phi3SmallWeights } from './weights.js';

/** Block-sparse masks are [nH, T, kv] bytes per sequence: 256-token chunks keep them small. */
const PREFILL_CHUNK = 256;

function sameInts(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class Phi3SmallModel extends PhiModelBase {
  readonly cfg: Phi3SmallConfig;
  private readonly w: Phi3SmallWeights;
  private readonly geom: AttentionGeometry;
  private readonly sparse: BlockSparseSpec;
  private readonly dummy: Int32Array;
  /** Every sparse layer of one step sees the same positions: build each run's mask once. */
  private readonly masks = new WeakMap<Run, { kPos: Int32Array; mask: Uint8Array | null }>();
  private readonly sparseMask: MaskBuilder;

  constructor(raw: Record<string, unknown>, store: WeightStore, opts: { longropePolicy?: 'hf' | 'long-only' } = {}) {
    const cfg = parsePhi3SmallConfig(raw, opts);
    const w = loadPhi3SmallWeights(store, cfg, raw);
    super({
      modelType: 'phi3small', family: 'phi3small', config: raw,
      ...configParams(cfg),
      layerCaches: Array.from({ length: cfg.num_hidden_layers }, () => ({
        nKvHeads: cfg.num_key_value_heads, headDim: cfg.head_dim, window: null,
      })),
      prefillChunk: PREFILL_CHUNK, stats: w.stats,
    });
    this.cfg = cfg;
    this.w = w;
    this.dummy = dummyTokenIds(cfg.vocab_size);
    // muP: scale = mup_attn_multiplier / D, not 1/sqrt(D) (phi3small.md §4).
    this.geom = {
      nHeads: cfg.num_attention_heads, nKvHeads: cfg.num_key_value_heads, headDim: cfg.head_dim,
      scale: cfg.mup_use_scaling ? cfg.mup_attn_multiplier / cfg.head_dim : 1 / Math.sqrt(cfg.head_dim),
      window: null,
    };
    this.sparse = {
      blockSize: cfg.blocksparse_block_size, localBlocks: cfg.blocksparse_num_local_blocks,
      vertStride: cfg.blocksparse_vert_stride, nHeads: cfg.num_attention_heads, homoHeads: cfg.blocksparse_homo_head_pattern,
    };
    this.sparseMask = (run, qPos, kPos) => {
      const hit = this.masks.get(run);
      if (hit && sameInts(hit.kPos, kPos)) return hit.mask;
      const mask = blockSparseMask(this.sparse, qPos, kPos);
      this.masks.set(run, { kPos: kPos.slice(), mask });
      return mask;
    };
  }

  override suppressedTokenIds(): Int32Array {
    return this.dummy.slice();
  }

  protected embed(ids: Int32Array): Float32Array {
    const x = this.w.embed.forward(ids);
    const m = this.cfg.mup_embedding_multiplier;
    return m === null ? x : ops.scale(x, m, 0, x);
  }

  protected layer(l: number, h: Float32Array, plan: Plan): void {
    const L = this.w.layers[l]!;
    const c = this.cfg;
    const M = plan.rows;
    const a = L.inputNorm.forward(h, c.hidden_size);
    const { q, k, v } = splitGroupedQkv(L.qkv.forward(a, M), M, c.num_attention_heads, c.num_key_value_heads, c.head_dim);
    const att = attendRuns(l, q, k, v, plan.runs, this.geom, isDenseLayer(c, l) ? undefined : this.sparseMask);
    ops.add(h, L.dense.forward(att, M), h);
    const m = L.postNorm.forward(h, c.hidden_size);
    const act = gegelu(L.up.forward(m, M), M, c.ff_intermediate_size, c.gegelu_limit);
    ops.add(h, L.down.forward(act, M), h);
  }

  protected head(x: Float32Array, rows: number): Float32Array {
    const logits = this.w.lmHead.forward(this.w.finalNorm.forward(x, this.cfg.hidden_size), rows);
    // HF divides the f32 logits by mup_width_multiplier (a division, not a multiply by the reciprocal).
    const d = this.cfg.mup_width_multiplier;
    for (let i = 0; i < logits.length; i++) logits[i] = logits[i]! / d;
    return logits;
  }
}
