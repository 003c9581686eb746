/** RoPE variants after alias resolution ("su" → longrope, "yarn" with factor lists → longrope). */
export type RopeType = 'default' | 'linear' | 'dynamic' | 'yarn' | 'llama3' | 'longrope' | 'proportional';

/** Channel pairing: 'half' = NeoX / half-split (i, i + d/2); 'interleaved' = GPT-J / traditional (2i, 2i+1). */
export type RopeLayout = 'half' | 'interleaved';

/**
 * LongRoPE table policy. 'hf' (default, matches Hugging Face and the project fixtures): short table while the
 * total length ≤ original_max_position_embeddings, long table beyond. 'long-only': always the long table
 * (current mlx-lm behaviour).
 */
export type LongRopePolicy = 'hf' | 'long-only';

/** Name of the frequency table a regime uses. */
export type RopeTableName = 'single' | 'short' | 'long' | 'dynamic';

export interface DefaultScaling {
  readonly type: 'default';
}
export interface LinearScaling {
  readonly type: 'linear';
  /** Positions are divided by this (equivalently every inverse frequency). */
  readonly factor: number;
}
export interface DynamicScaling {
  readonly type: 'dynamic';
  readonly factor: number;
  /** Length up to which the base is unchanged (`rope_scaling.original_max_position_embeddings`, else the top-level keys). */
  readonly originalMaxPositionEmbeddings: number;
}
export interface YarnScaling {
  readonly type: 'yarn';
  readonly factor: number;
  readonly originalMaxPositionEmbeddings: number;
  readonly betaFast: number;
  readonly betaSlow: number;
  /** Round the correction range outward to integers (HF `truncate`, default true). */
  readonly truncate: boolean;
  /** Resolved attention factor (explicit `attention_factor`, else from `mscale` / `mscale_all_dim`, else 0.1·ln s + 1). */
  readonly attentionFactor: number;
}
export interface Llama3Scaling {
  readonly type: 'llama3';
  readonly factor: number;
  readonly lowFreqFactor: number;
  readonly highFreqFactor: number;
  readonly originalMaxPositionEmbeddings: number;
}
export interface LongRopeScaling {
  readonly type: 'longrope';
  /** One factor per rotated pair; the period of pair i is multiplied by it. */
  readonly shortFactor: readonly number[];
  readonly longFactor: readonly number[];
  /** L₀, the regime threshold. */
  readonly originalMaxPositionEmbeddings: number;
  /** Attention factor (cos/sin multiplier) of the short table. */
  readonly shortMscale: number;
  /** Attention factor of the long table. */
  readonly longMscale: number;
  /** Where the factors came from: 'explicit' = short_mscale/long_mscale/attention_factor keys, 'formula' = sqrt(1 + ln s / ln L₀), 'one' = Phi-3-small short default. */
  readonly shortMscaleSource: 'explicit' | 'formula' | 'one';
  readonly longMscaleSource: 'explicit' | 'formula';
  readonly policy: LongRopePolicy;
}
export interface ProportionalScaling {
  readonly type: 'proportional';
  /** Divides every rotated inverse frequency (`factor`, default 1). */
  readonly factor: number;
  /** Number of pairs that rotate: floor(partial_rotary_factor · head_dim / 2). The rest have frequency 0. */
  readonly rotatedPairs: number;
}

export type RopeScaling =
  | DefaultScaling
  | LinearScaling
  | DynamicScaling
  | YarnScaling
  | Llama3Scaling
  | LongRopeScaling
  | ProportionalScaling;

/** Which table (and attention factor) produced a set of rotated keys. */
export interface RopeRegime {
  readonly table: RopeTableName;
  /** Attention factor folded into cos/sin (1 for most variants). */
  readonly scale: number;
  /** Dynamic NTK only: the sequence length its base was computed for. */
  readonly seqLen?: number;
  /**
   * Stable identifier: `<type>:<table>[@<seqLen>]:a=<scale>:h=<hash>`, hash = RopeSpec.hash (covers the factor
   * lists, theta, dims and every scaling parameter). Store it with a prompt cache; reuse only on equality.
   */
  readonly id: string;
}

export interface RopeSpecData {
  readonly type: RopeType;
  /** RoPE base θ. */
  readonly theta: number;
  /** Head dimension of the layer the spec is for. */
  readonly headDim: number;
  /** Number of channels that actually rotate (2 × rotated pairs). */
  readonly rotaryDim: number;
  /**
   * Width over which pairs are laid out and the kernel's `rotDim`: equals rotaryDim, except for Gemma 4
   * proportional RoPE where it is the full head dim (the non-rotating pairs get frequency 0).
   */
  readonly tableDim: number;
  readonly partialRotaryFactor: number;
  readonly layout: RopeLayout;
  /** Phi-3-small `rope_position_scale` (positions are multiplied by it); 1 elsewhere. */
  readonly positionScale: number;
  readonly maxPositionEmbeddings: number | null;
  /** The layer type this spec was parsed for (null when the config has a single RoPE). */
  readonly layerType: string | null;
  readonly scaling: RopeScaling;
  /** Hex digest of every parameter that determines the tables. */
  readonly hash: string;
}

export interface RopeSpec extends RopeSpecData {
  /** The regime for a sequence whose total length (cached + new tokens) is `totalLength`. */
  regimeFor(totalLength: number): RopeRegime;
}
