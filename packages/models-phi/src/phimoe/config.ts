/**
 * config.json of `model_type: "phimoe"` (Phi-3.5-MoE), docs/architecture/phimoe.md §2 and §8. Keys keep their
 * config.json names; missing keys take the HF PhimoeConfig defaults (rope_theta 1e6, no biases), which
 * differ from mlx-lm's (docs/architecture/phimoe.md §9).
 */
import type { RopeSpec } from '@mlxcel/rope';
import { ConfigReader } from '@mlxcel/models-core';
import { headGeometry } from '../common/config.js';

export interface PhiMoEConfig {
  model_type: 'phimoe';
  hidden_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  /** Per-expert MLP width. */
  intermediate_size: number;
  num_local_experts: number;
  num_experts_per_tok: number;
  /** ε: the sparsemixer threshold is 2ε (docs/architecture/phimoe.md §5). */
  router_jitter_noise: number;
  /**
   * eps of every LayerNorm: `rms_norm_eps` (the misnamed key the checkpoint uses), else
   * `layer_norm_eps`, else `layer_norm_epsilon`, else 1e-5 (docs/architecture/phimoe.md §2).
   */
  rms_norm_eps: number;
  vocab_size: number;
  max_position_embeddings: number;
  original_max_position_embeddings: number;
  sliding_window: number | null;
  attention_bias: boolean;
  lm_head_bias: boolean;
  tie_word_embeddings: boolean;
  hidden_act: 'silu';
  rope: RopeSpec;
}

export interface PhiMoEConfigOptions {
  longropePolicy?: 'hf' | 'long-only';
}

export function parsePhiMoEConfig(raw: Record<string, unknown>, opts: PhiMoEConfigOptions = {}): PhiMoEConfig {
  const r = new ConfigReader(raw, 'phimoe');
  r.modelType(['phimoe']);
  const H = r.int('hidden_size');
  const geo = headGeometry(r, H, { headDimKey: true });
  const hidden_act = r.oneOf('hidden_act', ['silu'] as const, 'silu');
  const E = r.int('num_local_experts');
  const k = r.int('num_experts_per_tok');
  if (k > E) r.fail('num_experts_per_tok', `= ${k} exceeds num_local_experts = ${E}: a token cannot pick more experts than exist`);
  if (k !== 2)
    // The reference router is defined for k = 2 only; other k use the per-round generalisation (§5).
    process.emitWarning(`phimoe: num_experts_per_tok = ${k}; the sparsemixer reference is defined for 2 (using its per-round generalisation)`);
  const epsKey = ['rms_norm_eps', 'layer_norm_eps', 'layer_norm_epsilon'].find((key) => r.has(key));
  const maxPos = r.int('max_position_embeddings', { default: 131072 });
  const window = r.has('sliding_window') ? r.int('sliding_window') : null;
  const rope = r.rope({ longropePolicy: opts.longropePolicy ?? 'hf', defaultTheta: 1e6, headDim: geo.headDim });
  if (rope.type !== 'default' && rope.type !== 'longrope')
    r.fail('rope_scaling', `type "${rope.type}" is not used by PhiMoE (expected "longrope"/"su" or null)`, 'E_CONFIG_UNSUPPORTED');
  return {
    model_type: 'phimoe',
    hidden_size: H,
    num_hidden_layers: r.int('num_hidden_layers'),
    num_attention_heads: geo.nHeads,
    num_key_value_heads: geo.nKvHeads,
    head_dim: geo.headDim,
    intermediate_size: r.int('intermediate_size'),
    num_local_experts: E,
    num_experts_per_tok: k,
    router_jitter_noise: r.num('router_jitter_noise', { nonNegative: true, default: 0.01 }),
    rms_norm_eps: epsKey ? r.num(epsKey, { positive: true }) : 1e-5,
    vocab_size: r.int('vocab_size'),
    max_position_embeddings: maxPos,
    original_max_position_embeddings: r.int('original_max_position_embeddings', { default: 4096 }),
    sliding_window: window !== null && window < maxPos ? window : null,
    attention_bias: r.bool('attention_bias', false),
    lm_head_bias: r.bool('lm_head_bias', false),
    tie_word_embeddings: r.bool('tie_word_embeddings', false),
    hidden_act,
    rope,
  };
}
