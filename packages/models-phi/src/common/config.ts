/**
 * Config reads the three Phi architectures share, over models-core's ConfigReader (every failure a
 * ModelConfigError naming the key): the identity and geometry keys every Phi config.json spells alike,
 * and the RoPE block with the scaling types each architecture runs.
 */
import { ConfigReader } from '@mlxcel/models-core';
import type { RopeSpec } from '@mlxcel/rope';

/** How LongRoPE is applied: 'hf' (default) switches short/long by length, 'long-only' is current mlx-lm (docs/architecture/phi3.md §4.4). */
export interface PhiRopeOptions {
  longropePolicy?: 'hf' | 'long-only';
}

/** The keys (HF names) every Phi architecture reads the same way. */
export interface PhiCommonConfig {
  hidden_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  /** `head_dim` if the architecture reads it and it is present, else hidden_size / num_attention_heads. */
  head_dim: number;
  vocab_size: number;
  max_position_embeddings: number;
  /** Parsed RoPE (plain when rope_scaling is null/absent). */
  rope: RopeSpec;
}

/** What differs between the architectures in those keys. */
export interface PhiCommonSpec {
  /** Whether `head_dim` may override hidden_size / num_attention_heads (Phi-3, PhiMoE). */
  headDimKey: boolean;
  /** HF default of max_position_embeddings. */
  maxPositionDefault: number;
  /** HF default of rope_theta when absent (PhiMoE: 1e6). */
  defaultTheta?: number;
  /** rope_scaling types the architecture runs ('default' = none) and how to say so when another is given. */
  ropeTypes: readonly string[];
  ropeExpected: string;
  /** Pass the head dim to the RoPE parser (partial rotary factors are resolved against it). */
  ropeHeadDim: boolean;
}

/** Attention head geometry common to the family: nH % nKV == 0 and D = head_dim ?? H / nH (docs/architecture/phi3.md §1). */
export function headGeometry(r: ConfigReader, hidden: number, opts: { headDimKey?: boolean } = {}): { nHeads: number; nKvHeads: number; headDim: number } {
  const nHeads = r.int('num_attention_heads');
  const nKvHeads = r.int('num_key_value_heads', { default: nHeads });
  if (nHeads % nKvHeads !== 0)
    r.fail('num_key_value_heads', `= ${nKvHeads} does not divide num_attention_heads = ${nHeads}`);
  let headDim: number;
  if (opts.headDimKey && r.has('head_dim')) headDim = r.int('head_dim');
  else {
    if (hidden % nHeads !== 0) r.fail('num_attention_heads', `= ${nHeads} does not divide hidden_size = ${hidden}`);
    headDim = hidden / nHeads;
  }
  return { nHeads, nKvHeads, headDim };
}

/**
 * Opens `raw` for `family` (model_type checked) and reads the shared keys; the reader is returned for
 * the architecture's own keys.
 */
export function readPhiCommon(
  raw: Record<string, unknown>, family: string, spec: PhiCommonSpec, opts: PhiRopeOptions = {},
): { r: ConfigReader; common: PhiCommonConfig } {
  const r = new ConfigReader(raw, family);
  r.modelType([family]);
  const hidden = r.int('hidden_size');
  const geo = headGeometry(r, hidden, { headDimKey: spec.headDimKey });
  const rope = r.rope({
    longropePolicy: opts.longropePolicy ?? 'hf',
    ...(spec.defaultTheta !== undefined ? { defaultTheta: spec.defaultTheta } : {}),
    ...(spec.ropeHeadDim ? { headDim: geo.headDim } : {}),
  });
  if (!spec.ropeTypes.includes(rope.type))
    r.fail('rope_scaling', `type "${rope.type}" is not used by ${spec.ropeExpected}`, 'E_CONFIG_UNSUPPORTED');
  return {
    r,
    common: {
      hidden_size: hidden,
      num_hidden_layers: r.int('num_hidden_layers'),
      num_attention_heads: geo.nHeads,
      num_key_value_heads: geo.nKvHeads,
      head_dim: geo.headDim,
      vocab_size: r.int('vocab_size'),
      max_position_embeddings: r.int('max_position_embeddings', { default: spec.maxPositionDefault }),
      rope,
    },
  };
}
