/**
 * config.json of `model_type: "phi3"` (Phi-3 / Phi-3.5-mini, Phi-3-medium, Phi-4-mini), docs/architecture/phi3.md §1.
 * Keys keep their config.json names; defaults are the HF Phi3Config ones.
 */
import { readPhiCommon, type PhiCommonConfig, type PhiRopeOptions } from '../common/config.js';

/** head_dim: `head_dim` if present, else hidden_size / num_attention_heads (HF rule, docs/architecture/phi3.md §1). */
export interface Phi3Config extends PhiCommonConfig {
  model_type: 'phi3';
  intermediate_size: number;
  rms_norm_eps: number;
  /** Regime threshold L₀ of LongRoPE (HF default 4096). */
  original_max_position_embeddings: number;
  /** Sliding window W, or null when absent / not smaller than the context (then a no-op, docs/architecture/phi3.md §3.2). */
  sliding_window: number | null;
  tie_word_embeddings: boolean;
  hidden_act: 'silu';
  partial_rotary_factor: number;
}

export interface Phi3ConfigOptions extends PhiRopeOptions {
  /** mlx-lm parity: ignore `sliding_window` (plain causal attention), docs/architecture/phi3.md §3.2. */
  ignoreSlidingWindow?: boolean;
}

export function parsePhi3Config(raw: Record<string, unknown>, opts: Phi3ConfigOptions = {}): Phi3Config {
  const { r, common } = readPhiCommon(raw, 'phi3', {
    headDimKey: true, maxPositionDefault: 4096, ropeHeadDim: true, ropeTypes: ['default', 'longrope', 'linear'],
    ropeExpected: `Phi-3 (expected null, "longrope"/"su" or mlx-lm's "linear", docs/architecture/phi3.md §4.2)`,
  }, opts);
  const hidden_act = r.oneOf('hidden_act', ['silu'] as const, 'silu');
  // Phi-3 has no biases anywhere (docs/architecture/phi3.md §2); Phi-4-mini spells the flags out as false.
  for (const k of ['attention_bias', 'mlp_bias', 'lm_head_bias'])
    r.requireFlag(k, false, 'Phi-3 checkpoints have no biases (docs/architecture/phi3.md §2)');
  let window: number | null = r.has('sliding_window') ? r.int('sliding_window') : null;
  if (opts.ignoreSlidingWindow || (window !== null && window >= common.max_position_embeddings)) window = null;
  return {
    model_type: 'phi3',
    ...common,
    intermediate_size: r.int('intermediate_size'),
    rms_norm_eps: r.num('rms_norm_eps', { positive: true, default: 1e-5 }),
    original_max_position_embeddings: r.int('original_max_position_embeddings', { default: 4096 }),
    sliding_window: window,
    tie_word_embeddings: r.bool('tie_word_embeddings', false),
    hidden_act,
    partial_rotary_factor: common.rope.partialRotaryFactor,
  };
}
