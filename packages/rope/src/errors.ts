import { MlxcelError } from '@mlxcel/tensor';

/** Why a RoPE configuration was rejected. */
export type RopeErrorCode =
  /** The config (or a nested object such as `rope_scaling`) is not a JSON object. */
  | 'invalid_config'
  /** A key the selected RoPE variant needs is absent (or null). */
  | 'missing_key'
  /** `rope_type` / `type` names a variant this package does not implement. */
  | 'unknown_rope_type'
  /** A scalar has the wrong JSON type, is not finite, or is out of range (e.g. theta ≤ 0). */
  | 'invalid_value'
  /** A factor list is not an array of finite positive numbers. */
  | 'invalid_factor_list'
  /** A factor list has the wrong number of entries (must be rotary_dim / 2). */
  | 'wrong_length'
  /** Two keys that must agree do not (e.g. top-level and nested `original_max_position_embeddings`). */
  | 'conflict'
  /** The rotated width `floor(head_dim · partial_rotary_factor)` is odd or zero. */
  | 'odd_rotary_dim'
  /** The config declares RoPE per layer type and no (or an unknown) layer type was requested. */
  | 'layer_type'
  /** A full-attention layer declares plain RoPE with a head dim that differs from `head_dim` (Gemma 4). */
  | 'ambiguous_head_dim';

/**
 * Thrown for every malformed RoPE configuration. `key` is the config key at fault, as a dotted
 * path from the config root (e.g. `rope_scaling.short_factor`, `text_config.rope_parameters.full_attention.rope_theta`).
 * It is an `MlxcelError` (mlxcel's one error class), so callers can catch every mlxcel error alike.
 */
export class RopeConfigError extends MlxcelError {
  declare readonly code: RopeErrorCode;
  readonly key: string;

  constructor(code: RopeErrorCode, key: string, message: string) {
    super(code, `${key}: ${message}`);
    this.name = 'RopeConfigError';
    this.key = key;
  }
}
