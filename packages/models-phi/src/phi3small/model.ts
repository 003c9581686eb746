/**
 * The Phi-3-small model: its decoder layer (microsoft/Phi-3-small-8k-instruct
 * `modeling_phi3_small.py` on the Hugging Face Hub: `Phi3SmallModel.forward`,
 * `Phi3SmallDecoderLayer.forward`; docs/architecture/phi3small.md §3):
 *   embed × mup_embedding_multiplier → every pre-LayerNorm decoder layer (biased grouped QKV, dense or
 *   block-sparse attention (HF layer rule) with scale mup_attn_multiplier / D under muP, GeGELU MLP)
 * (the embed → layers loop is common/model-base.ts) then models-core's LmHead: final LayerNorm → tied
 * head → ÷ mup_width_multiplier. Logits stay raw:
 * the 91 dummy ids are declared by suppressedTokenIds() for the sampler. Shapes: N rows,
 * H = hidden_size, nH / nKV heads of D, F = ff_intermediate_size.
 */
import { cacheSpecOf, type MaskBuilder } from '@mlxcel/models-core';
import { ops, type WeightStore } from '@mlxcel/tensor';
import { gegelu } from '../common/activations.js';
import { phiAttention } from '../common/attention.js';
import type { PhiLayout, PhiRun } from '../common/batch.js';
import { PhiModelBase } from '../common/model-base.js';
import { blockSparseMask, type BlockSparseSpec } from './blocksparse.js';
import { isDenseLayer, parsePhi3SmallConfig, type Phi3SmallConfig } from './config.js';
import { dummyTokenIds } from './dummy.js';
import { splitGroupedQkv } from './qkv.js';
import { loadPhi3SmallWeights, type Phi3SmallLayer, type Phi3SmallWeights } from './weights.js';

/** Block-sparse masks are [nH, T, kv] bytes per sequence: 256-token chunks keep them small. */
const PREFILL_CHUNK = 256;

function sameInts(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class Phi3SmallModel extends PhiModelBase<Phi3SmallConfig, Phi3SmallWeights> {
  private readonly sparse: BlockSparseSpec;
  private readonly dummy: Int32Array;
  /** Every sparse layer of one step sees the same positions: build each run's mask once. */
  private readonly masks = new WeakMap<PhiRun, { kPos: Int32Array; mask: Uint8Array | null }>();
  private readonly sparseMask: MaskBuilder<PhiRun>;

  constructor(raw: Record<string, unknown>, store: WeightStore, opts: { longropePolicy?: 'hf' | 'long-only' } = {}) {
    const cfg = parsePhi3SmallConfig(raw, opts);
    // muP: scale = mup_attn_multiplier / D, not 1/sqrt(D) (docs/architecture/phi3small.md §4).
    const geom = {
      nHeads: cfg.num_attention_heads, nKvHeads: cfg.num_key_value_heads, headDim: cfg.head_dim,
      scale: cfg.mup_use_scaling ? cfg.mup_attn_multiplier / cfg.head_dim : 1 / Math.sqrt(cfg.head_dim),
      window: null,
    };
    const layerCaches = Array.from({ length: cfg.num_hidden_layers }, () => cacheSpecOf(geom));
    super(raw, cfg, loadPhi3SmallWeights(store, cfg, raw), {
      attention: { geom, layerCaches }, prefillChunk: PREFILL_CHUNK, embeddingScale: cfg.mup_embedding_multiplier,
      // HF divides the f32 logits by mup_width_multiplier (a division, not a multiply by the reciprocal).
      head: { divideBy: cfg.mup_width_multiplier },
    });
    this.dummy = dummyTokenIds(cfg.vocab_size);
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

  /** One decoder layer, updating the residual h [N, H] in place (and returning it). */
  protected decoderLayer(l: number, h: Float32Array, b: PhiLayout): Float32Array {
    const L: Phi3SmallLayer = this.w.layers[l]!;
    const c = this.cfg, H = c.hidden_size;
    const N = b.n;
    const attnIn = L.inputNorm.forward(h, H); // [N, H]
    const { q, k, v } = splitGroupedQkv(L.qkv.forward(attnIn, N), N, c.num_attention_heads, c.num_key_value_heads, c.head_dim); // [N, nH·D], [N, nKV·D] ×2
    const attn = phiAttention(l, q, k, v, b, this.geom, isDenseLayer(c, l) ? undefined : this.sparseMask); // [N, nH·D]
    ops.add(h, L.dense.forward(attn, N), h);
    const mlpIn = L.postNorm.forward(h, H); // [N, H]
    const act = gegelu(L.up.forward(mlpIn, N), N, c.ff_intermediate_size, c.gegelu_limit); // [N, 2F] → [N, F]
    return ops.add(h, L.down.forward(act, N), h);
  }
}
