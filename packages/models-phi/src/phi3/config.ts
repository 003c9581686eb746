/**
 * config.json of `model_type: "phi3"` (Phi-3 / Phi-3.5-mini, Phi-3-medium, Phi-4-mini), docs/architecture/phi3.md §1.
 * Keys keep their config.json names; defaults are the HF Phi3Config ones.
 */
import type { RopeSpec } from '@mlxcel/rope';
import { ConfigReader } from '@mlxcel/models-core';
import { headGeometry } from '../common/config.js';

export interface Phi3Config {
  model_type: 'phi3';
  hidden_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  /** `head_dim` if present, else hidden_size / num_attention_heads (HF rule, docs/architecture/phi3.md §1). */
  head_dim: number;
  intermediate_size: number;
  rms_norm_eps: number;
  vocab_size: number;
  max_position_embeddings: number;
  /** Regime threshold L₀ of LongRoPE (HF default 4096). */
  original_max_position_embeddings: number;
  /** Sliding window W, or null when absent / not smaller than the context (then a no-op, docs/architecture/phi3.md §3.2). */
  sliding_window: number | null;
  tie_word_embeddings: boolean;
  hidden_act: 'silu';
  partial_rotary_factor: number;
  /** Parsed RoPE (plain when rope_scaling is null/absent, LongRoPE for "longrope"/"su"). */
  rope: RopeSpec;
}

export interface Phi3ConfigOptions {
  /** mlx-lm parity: ignore `sliding_window` (plain causal attention), docs/architecture/phi3.md §3.2. */
  ignoreSlidingWindow?: boolean;
  /** 'hf' (default): short/long LongRoPE switch; 'long-only': current mlx-lm (docs/architecture/phi3.md §4.4). */
  longropePolicy?: 'hf' | 'long-only';
}

export function parsePhi3Config(raw: Record<string, unknown>, opts: Phi3ConfigOptions = {}): Phi3Config {
  const r = new ConfigReader(raw, 'phi3');
  r.modelType(['phi3']);
  const hidden = r.int('hidden_size');
  const geo = headGeometry(r, hidden, { headDimKey: true });
  const hidden_act = r.oneOf('hidden_act', ['silu'] as const, 'silu');
  // Phi-3 has no biases anywhere (docs/architecture/phi3.md §2); Phi-4-mini spells the flags out as false.
  for (const k of ['attention_bias', 'mlp_bias', 'lm_head_bias'])
    r.requireFlag(k, false, 'Phi-3 checkpoints have no biases (docs/architecture/phi3.md §2)');
  const maxPos = r.int('max_position_embeddings', { default: 4096 });
  let window: number | null = r.has('sliding_window') ? r.int('sliding_window') : null;
  if (opts.ignoreSlidingWindow || (window !== null && window >= maxPos)) window = null;
  const rope = r.rope({ longropePolicy: opts.longropePolicy ?? 'hf', headDim: geo.headDim });
  if (rope.type !== 'default' && rope.type !== 'longrope' && rope.type !== 'linear')
    r.fail('rope_scaling', `type "${rope.type}" is not used by Phi-3 (expected null, "longrope"/"su" or mlx-lm's "linear", docs/architecture/phi3.md §4.2)`, 'E_CONFIG_UNSUPPORTED');
  return {
    model_type: 'phi3',
    hidden_size: hidden,
    num_hidden_layers: r.int('num_hidden_layers'),
    num_attention_heads: geo.nHeads,
    num_key_value_heads: geo.nKvHeads,
    head_dim: geo.headDim,
    intermediate_size: r.int('intermediate_size'),
    rms_norm_eps: r.num('rms_norm_eps', { positive: true, default: 1e-5 }),
    vocab_size: r.int('vocab_size'),
    max_position_embeddings: maxPos,
    original_max_position_embeddings: r.int('original_max_position_embeddings', { default: 4096 }),
    sliding_window: window,
    tie_word_embeddings: r.bool('tie_word_embeddings', false),
    hidden_act,
    partial_rotary_factor: rope.partialRotaryFactor,
    rope,
  };
}
