/**
 * config.json of `model_type: "phimoe"` (Phi-3.5-MoE), docs/architecture/phimoe.md §2 and §8. Keys keep their
 * config.json names; missing keys take the HF PhimoeConfig defaults (rope_theta 1e6, no biases), which
 * differ from mlx-lm's (docs/architecture/phimoe.md §9).
 */
import { readPhiCommon, type PhiCommonConfig, type PhiRopeOptions } from '../common/config.js';

export interface PhiMoEConfig extends PhiCommonConfig {
  model_type: 'phimoe';
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
  original_max_position_embeddings: number;
  sliding_window: number | null;
  attention_bias: boolean;
  lm_head_bias: boolean;
  tie_word_embeddings: boolean;
  hidden_act: 'silu';
}

export type PhiMoEConfigOptions = PhiRopeOptions;

export function parsePhiMoEConfig(raw: Record<string, unknown>, opts: PhiMoEConfigOptions = {}): PhiMoEConfig {
  const { r, common } = readPhiCommon(raw, 'phimoe', {
    headDimKey: true, maxPositionDefault: 131072, defaultTheta: 1e6, ropeHeadDim: true,
    ropeTypes: ['default', 'longrope'], ropeExpected: 'PhiMoE (expected "longrope"/"su" or null)',
  }, opts);
  const hidden_act = r.oneOf('hidden_act', ['silu'] as const, 'silu');
  const E = r.int('num_local_experts');
  const k = r.int('num_experts_per_tok');
  if (k > E) r.fail('num_experts_per_tok', `= ${k} exceeds num_local_experts = ${E}: a token cannot pick more experts than exist`);
  if (k !== 2)
    // The reference router is defined for k = 2 only; other k use the per-round generalisation (§5).
    process.emitWarning(`phimoe: num_experts_per_tok = ${k}; the sparsemixer reference is defined for 2 (using its per-round generalisation)`);
  const epsKey = ['rms_norm_eps', 'layer_norm_eps', 'layer_norm_epsilon'].find((key) => r.has(key));
  const window = r.has('sliding_window') ? r.int('sliding_window') : null;
  return {
    model_type: 'phimoe',
    ...common,
    intermediate_size: r.int('intermediate_size'),
    num_local_experts: E,
    num_experts_per_tok: k,
    router_jitter_noise: r.num('router_jitter_noise', { nonNegative: true, default: 0.01 }),
    rms_norm_eps: epsKey ? r.num(epsKey, { positive: true }) : 1e-5,
    original_max_position_embeddings: r.int('original_max_position_embeddings', { default: 4096 }),
    sliding_window: window !== null && window < common.max_position_embeddings ? window : null,
    attention_bias: r.bool('attention_bias', false),
    lm_head_bias: r.bool('lm_head_bias', false),
    tie_word_embeddings: r.bool('tie_word_embeddings', false),
    hidden_act,
  };
}
