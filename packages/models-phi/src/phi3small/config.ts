/**
 * config.json of `model_type: "phi3small"` (Phi-3-small-8k / 128k), docs/architecture/phi3small.md §1. Keys keep their
 * config.json names; derived values (head_dim, the MLP width, the attention scale) are resolved here.
 */
import { readPhiCommon, type PhiCommonConfig, type PhiRopeOptions } from '../common/config.js';

/** head_dim = hidden_size / num_attention_heads (no head_dim key). */
export interface Phi3SmallConfig extends PhiCommonConfig {
  model_type: 'phi3small';
  /** MLP width F (from ff_intermediate_size, or from ff_dim_multiplier, docs/architecture/phi3small.md §1). */
  ff_intermediate_size: number;
  hidden_act: 'gegelu';
  /** null = no clamping. */
  gegelu_limit: number | null;
  layer_norm_epsilon: number;
  tie_word_embeddings: boolean;
  mup_use_scaling: boolean;
  mup_attn_multiplier: number;
  /** null when absent or ≤ 0 (HF then skips the multiplication). */
  mup_embedding_multiplier: number | null;
  mup_width_multiplier: number;
  /** null or 0 ⇒ every layer block-sparse (docs/architecture/phi3small.md §4.2). */
  dense_attention_every_n_layers: number | null;
  blocksparse_block_size: number;
  blocksparse_num_local_blocks: number;
  blocksparse_vert_stride: number;
  blocksparse_homo_head_pattern: boolean;
}

export function parsePhi3SmallConfig(raw: Record<string, unknown>, opts: PhiRopeOptions = {}): Phi3SmallConfig {
  const { r, common } = readPhiCommon(raw, 'phi3small', {
    headDimKey: false, maxPositionDefault: 8192, ropeHeadDim: false, ropeTypes: ['default', 'longrope'],
    ropeExpected: 'Phi-3-small (null or "longrope"/"su", docs/architecture/phi3small.md §5)',
  }, opts);
  const H = common.hidden_size;
  const hidden_act = r.oneOf('hidden_act', ['gegelu'] as const, 'gegelu');
  // Exactly one of ff_intermediate_size / ff_dim_multiplier (docs/architecture/phi3small.md §1).
  let F: number;
  const hasSize = r.has('ff_intermediate_size'), hasMult = r.has('ff_dim_multiplier');
  if (hasSize === hasMult)
    r.fail(hasSize ? 'ff_dim_multiplier' : 'ff_intermediate_size', 'exactly one of ff_intermediate_size and ff_dim_multiplier must be non-null', hasSize ? 'E_CONFIG_INVALID' : 'E_CONFIG_MISSING');
  if (hasSize) F = r.int('ff_intermediate_size');
  else {
    F = r.num('ff_dim_multiplier', { positive: true }) * Math.floor(H / 3) * 2;
    if (r.bool('gegelu_pad_to_256', false)) F = Math.ceil(F / 256) * 256;
    if (!Number.isInteger(F)) r.fail('ff_dim_multiplier', `gives a non-integer MLP width ${F}`);
  }
  const embMult = r.optNum('mup_embedding_multiplier');
  const nEvery = r.has('dense_attention_every_n_layers') ? r.int('dense_attention_every_n_layers', { min: 0 }) : null;
  return {
    model_type: 'phi3small',
    ...common,
    ff_intermediate_size: F,
    hidden_act,
    gegelu_limit: r.optNum('gegelu_limit', { positive: true }),
    layer_norm_epsilon: r.num('layer_norm_epsilon', { positive: true, default: 1e-5 }),
    // Absent ⇒ tied: the checkpoint has no lm_head (docs/architecture/phi3small.md §1).
    tie_word_embeddings: r.bool('tie_word_embeddings', true),
    mup_use_scaling: r.bool('mup_use_scaling', true),
    mup_attn_multiplier: r.num('mup_attn_multiplier', { positive: true, default: 1 }),
    mup_embedding_multiplier: embMult !== null && embMult > 0 ? embMult : null,
    mup_width_multiplier: r.num('mup_width_multiplier', { positive: true, default: 8 }),
    dense_attention_every_n_layers: nEvery === 0 ? null : nEvery,
    blocksparse_block_size: r.int('blocksparse_block_size', { default: 64 }),
    blocksparse_num_local_blocks: r.int('blocksparse_num_local_blocks', { default: 16 }),
    blocksparse_vert_stride: r.int('blocksparse_vert_stride', { default: 8 }),
    blocksparse_homo_head_pattern: r.bool('blocksparse_homo_head_pattern', false),
  };
}

/** HF layer rule (docs/architecture/phi3small.md §4.2): dense iff n is set and (ℓ + 1) mod n = 0, else block-sparse. */
export function isDenseLayer(c: Phi3SmallConfig, layer: number): boolean {
  const n = c.dense_attention_every_n_layers;
  return n !== null && (layer + 1) % n === 0;
}
