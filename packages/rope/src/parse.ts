import { createHash } from 'node:crypto';
import { RopeConfigError } from './errors.js';
import { regimeFor } from './regime.js';
import type {
  LongRopePolicy,
  RopeLayout,
  RopeScaling,
  RopeSpec,
  RopeSpecData,
  RopeType,
} from './types.js';

export interface ParseRopeOptions {
  /** Layer type to parse for ("full_attention", "sliding_attention"), required when RoPE is declared per layer type. */
  layerType?: string;
  /** Layer index: picks the layer type from `layer_types` and the head dim from `per_layer_config` when present. */
  layerIndex?: number;
  /** Override the head dim (otherwise `global_head_dim` on full layers, `head_dim`, or hidden_size / num_attention_heads). */
  headDim?: number;
  /** θ to use when the config has no `rope_theta` (or equivalent). Without it a missing θ is an error. */
  defaultTheta?: number;
  /** Channel pairing; default 'half' (every supported family uses half-split). */
  layout?: RopeLayout;
  /** LongRoPE table policy; default 'hf'. */
  longropePolicy?: LongRopePolicy;
}

type Json = Record<string, unknown>;

const SUPPORTED = ['default', 'linear', 'dynamic', 'yarn', 'llama3', 'longrope', 'su', 'proportional'];

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function present(v: unknown): boolean {
  return v !== undefined && v !== null;
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `an array of length ${v.length}`;
  if (isObject(v)) return 'an object';
  return String(v);
}

/** A finite number (optionally > 0, optionally an integer); throws naming `key` otherwise. */
function num(v: unknown, key: string, opts: { positive?: boolean; integer?: boolean; nonNegative?: boolean } = {}): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new RopeConfigError('invalid_value', key, `expected a finite number, got ${describe(v)}`);
  }
  if (opts.positive && !(v > 0)) throw new RopeConfigError('invalid_value', key, `must be > 0, got ${v}`);
  if (opts.nonNegative && !(v >= 0)) throw new RopeConfigError('invalid_value', key, `must be >= 0, got ${v}`);
  if (opts.integer && !Number.isInteger(v)) throw new RopeConfigError('invalid_value', key, `must be an integer, got ${v}`);
  return v;
}

function required(obj: Json, name: string, prefix: string, what: string): unknown {
  const v = obj[name];
  if (!present(v)) throw new RopeConfigError('missing_key', `${prefix}.${name}`, `required for ${what}`);
  return v;
}

function factorList(rope: Json, name: string, ropeKey: string, expected: number, rotaryDim: number): number[] {
  const key = `${ropeKey}.${name}`;
  const v = rope[name];
  if (!present(v)) throw new RopeConfigError('missing_key', key, `LongRoPE needs ${name} (a list of ${expected} factors)`);
  if (!Array.isArray(v)) throw new RopeConfigError('invalid_factor_list', key, `expected a list of ${expected} numbers, got ${describe(v)}`);
  const out: number[] = [];
  for (let i = 0; i < v.length; i++) {
    const f: unknown = v[i];
    if (typeof f !== 'number' || !Number.isFinite(f) || !(f > 0)) {
      throw new RopeConfigError('invalid_factor_list', key, `entry ${i} must be a finite number > 0, got ${describe(f)}`);
    }
    out.push(f);
  }
  if (out.length !== expected) {
    throw new RopeConfigError(
      'wrong_length',
      key,
      `has ${out.length} entries, expected rotary_dim / 2 = ${expected} (rotary_dim ${rotaryDim})`,
    );
  }
  return out;
}

/** YaRN's magnitude correction: 0.1 · m · ln s + 1 for s > 1, else 1. */
function yarnMscale(scale: number, m = 1): number {
  return scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1;
}

/** Parse the RoPE configuration of one layer (or of the whole model when it has a single RoPE). */
export function parseRope(config: unknown, options: ParseRopeOptions = {}): RopeSpec {
  if (!isObject(config)) throw new RopeConfigError('invalid_config', '(config)', `expected a JSON object, got ${describe(config)}`);
  let root: Json = config;
  let prefix = '';
  if (present(config.text_config)) {
    if (!isObject(config.text_config)) {
      throw new RopeConfigError('invalid_config', 'text_config', `expected an object, got ${describe(config.text_config)}`);
    }
    root = config.text_config;
    prefix = 'text_config.';
  }
  const modelType = typeof root.model_type === 'string' ? root.model_type : typeof config.model_type === 'string' ? config.model_type : '';

  // ---- layer type
  let layerType: string | null = options.layerType ?? null;
  const layerTypes = Array.isArray(root.layer_types) ? (root.layer_types as unknown[]) : null;
  if (options.layerIndex !== undefined) {
    const idx = options.layerIndex;
    if (!Number.isInteger(idx) || idx < 0) throw new RangeError(`parseRope: layerIndex must be a non-negative integer, got ${idx}`);
    if (layerTypes) {
      if (idx >= layerTypes.length) {
        throw new RopeConfigError('layer_type', `${prefix}layer_types`, `has ${layerTypes.length} entries, no layer ${idx}`);
      }
      const lt = layerTypes[idx];
      if (typeof lt !== 'string') throw new RopeConfigError('invalid_value', `${prefix}layer_types[${idx}]`, `expected a string, got ${describe(lt)}`);
      if (layerType !== null && layerType !== lt) {
        throw new RopeConfigError('layer_type', `${prefix}layer_types[${idx}]`, `is "${lt}" but layerType "${layerType}" was requested`);
      }
      layerType = lt;
    }
  }
  if (layerType !== null && layerTypes && !layerTypes.includes(layerType)) {
    throw new RopeConfigError('layer_type', `${prefix}layer_types`, `has no layer of type "${layerType}"`);
  }

  // ---- which dict holds the RoPE parameters
  let rope: Json = {};
  let ropeKey: string;
  let thetaOverride: { value: unknown; key: string } | null = null;
  const rp = root.rope_parameters;
  if (present(rp)) {
    if (!isObject(rp)) throw new RopeConfigError('invalid_value', `${prefix}rope_parameters`, `expected an object, got ${describe(rp)}`);
    const values = Object.values(rp);
    const nested = values.length > 0 && values.every(isObject) && !('rope_type' in rp) && !('type' in rp);
    if (nested) {
      const kinds = Object.keys(rp);
      if (layerType === null) {
        throw new RopeConfigError(
          'layer_type',
          `${prefix}rope_parameters`,
          `RoPE is declared per layer type (${kinds.join(', ')}); pass { layerType } or { layerIndex }`,
        );
      }
      if (!(layerType in rp)) {
        throw new RopeConfigError('layer_type', `${prefix}rope_parameters.${layerType}`, `missing; the config declares ${kinds.join(', ')}`);
      }
      rope = rp[layerType] as Json;
      ropeKey = `${prefix}rope_parameters.${layerType}`;
    } else {
      rope = rp;
      ropeKey = `${prefix}rope_parameters`;
    }
  } else if (present(root.rope_local_base_freq)) {
    // Gemma 3n: rope_theta for full layers, rope_local_base_freq for sliding ones; rope_scaling (if any) only on full.
    if (layerType === null) {
      throw new RopeConfigError(
        'layer_type',
        `${prefix}rope_local_base_freq`,
        'the config has separate local (sliding) and global RoPE bases; pass { layerType } or { layerIndex }',
      );
    }
    if (layerType === 'sliding_attention') {
      thetaOverride = { value: root.rope_local_base_freq, key: `${prefix}rope_local_base_freq` };
      ropeKey = `${prefix}rope_local_base_freq`;
    } else {
      ropeKey = `${prefix}rope_scaling`;
      const rs = root.rope_scaling;
      if (present(rs)) {
        if (!isObject(rs)) throw new RopeConfigError('invalid_value', ropeKey, `expected an object or null, got ${describe(rs)}`);
        rope = rs;
      }
    }
  } else {
    ropeKey = `${prefix}rope_scaling`;
    const rs = root.rope_scaling;
    if (present(rs)) {
      if (!isObject(rs)) throw new RopeConfigError('invalid_value', ropeKey, `expected an object or null, got ${describe(rs)}`);
      rope = rs;
    }
  }

  // ---- type
  const typeKeys = (['rope_type', 'type'] as const).filter((k) => present(rope[k]));
  const resolved: { type: RopeType; key: string }[] = typeKeys.map((k) => {
    const raw = rope[k];
    const key = `${ropeKey}.${k}`;
    if (typeof raw !== 'string') throw new RopeConfigError('invalid_value', key, `expected a string, got ${describe(raw)}`);
    let t: string = raw;
    if (t === 'su') t = 'longrope';
    // transformers v5 rewrites Phi "yarn" (with factor lists) to "longrope".
    if (t === 'yarn' && (present(rope.short_factor) || present(rope.long_factor))) t = 'longrope';
    if (!SUPPORTED.includes(t)) {
      throw new RopeConfigError('unknown_rope_type', key, `unknown RoPE type "${raw}"; supported: ${SUPPORTED.join(', ')}`);
    }
    return { type: t as RopeType, key };
  });
  if (resolved.length === 2 && resolved[0]!.type !== resolved[1]!.type) {
    throw new RopeConfigError(
      'conflict',
      `${ropeKey}.rope_type`,
      `"${String(rope.rope_type)}" disagrees with ${ropeKey}.type "${String(rope.type)}"`,
    );
  }
  const type: RopeType = resolved[0]?.type ?? 'default';
  const typeKey = resolved[0]?.key ?? `${ropeKey}.rope_type`;

  // ---- theta
  const thetaCandidates: { value: unknown; key: string }[] = [];
  if (thetaOverride) thetaCandidates.push(thetaOverride);
  thetaCandidates.push(
    { value: rope.rope_theta, key: `${ropeKey}.rope_theta` },
    { value: root.rope_theta, key: `${prefix}rope_theta` },
    { value: root.rope_embedding_base, key: `${prefix}rope_embedding_base` },
    { value: options.defaultTheta, key: 'options.defaultTheta' },
  );
  const thetaSrc = thetaCandidates.find((c) => present(c.value));
  if (!thetaSrc) {
    throw new RopeConfigError(
      'missing_key',
      `${prefix}rope_theta`,
      `no RoPE base found (looked for ${ropeKey}.rope_theta, ${prefix}rope_theta, ${prefix}rope_embedding_base); pass { defaultTheta } to use a model default`,
    );
  }
  const theta = num(thetaSrc.value, thetaSrc.key, { positive: true });

  // ---- head dim
  let headDim: number;
  let headDimKey: string;
  if (options.headDim !== undefined) {
    headDim = num(options.headDim, 'options.headDim', { positive: true, integer: true });
    headDimKey = 'options.headDim';
  } else {
    const perLayer = options.layerIndex !== undefined && isObject(root.per_layer_config) ? root.per_layer_config[String(options.layerIndex)] : undefined;
    if (layerType === 'full_attention' && present(root.global_head_dim) && root.global_head_dim !== 0) {
      headDimKey = `${prefix}global_head_dim`;
      headDim = num(root.global_head_dim, headDimKey, { positive: true, integer: true });
    } else if (isObject(perLayer) && present(perLayer.head_dim)) {
      headDimKey = `${prefix}per_layer_config.${options.layerIndex}.head_dim`;
      headDim = num(perLayer.head_dim, headDimKey, { positive: true, integer: true });
    } else if (present(root.head_dim)) {
      headDimKey = `${prefix}head_dim`;
      headDim = num(root.head_dim, headDimKey, { positive: true, integer: true });
    } else {
      headDimKey = `${prefix}head_dim`;
      if (!present(root.hidden_size) || !present(root.num_attention_heads)) {
        throw new RopeConfigError('missing_key', headDimKey, `absent, and hidden_size / num_attention_heads cannot be computed`);
      }
      const h = num(root.hidden_size, `${prefix}hidden_size`, { positive: true, integer: true });
      const n = num(root.num_attention_heads, `${prefix}num_attention_heads`, { positive: true, integer: true });
      if (h % n !== 0) {
        throw new RopeConfigError('invalid_value', `${prefix}hidden_size`, `${h} is not divisible by num_attention_heads ${n}, and head_dim is absent`);
      }
      headDim = h / n;
    }
  }
  if (
    layerType === 'full_attention' &&
    type === 'default' &&
    options.headDim === undefined &&
    present(root.global_head_dim) &&
    root.global_head_dim !== 0 &&
    present(root.head_dim) &&
    root.global_head_dim !== root.head_dim
  ) {
    throw new RopeConfigError(
      'ambiguous_head_dim',
      typeKey,
      `plain RoPE on full-attention layers with global_head_dim ${String(root.global_head_dim)} ≠ head_dim ${String(root.head_dim)} ` +
        `is ambiguous (HF would use head_dim); expected rope_type "proportional"`,
    );
  }

  // ---- partial rotary
  const partialSrc = present(rope.partial_rotary_factor)
    ? { value: rope.partial_rotary_factor, key: `${ropeKey}.partial_rotary_factor` }
    : present(root.partial_rotary_factor)
      ? { value: root.partial_rotary_factor, key: `${prefix}partial_rotary_factor` }
      : null;
  const partial = partialSrc ? num(partialSrc.value, partialSrc.key, { positive: true }) : 1;
  if (partialSrc && partial > 1) throw new RopeConfigError('invalid_value', partialSrc.key, `must be in (0, 1], got ${partial}`);

  let rotaryDim: number;
  let tableDim: number;
  let rotatedPairs = 0;
  if (type === 'proportional') {
    if (headDim % 2 !== 0) throw new RopeConfigError('odd_rotary_dim', headDimKey, `proportional RoPE needs an even head dim, got ${headDim}`);
    rotatedPairs = Math.floor((partial * headDim) / 2);
    if (rotatedPairs < 1) {
      throw new RopeConfigError('odd_rotary_dim', partialSrc?.key ?? headDimKey, `rotates no pair (floor(${partial} · ${headDim} / 2) = 0)`);
    }
    rotaryDim = 2 * rotatedPairs;
    tableDim = headDim;
  } else {
    rotaryDim = Math.floor(headDim * partial);
    if (rotaryDim < 2 || rotaryDim % 2 !== 0) {
      throw new RopeConfigError(
        'odd_rotary_dim',
        partialSrc?.key ?? headDimKey,
        `rotary dim floor(${headDim} · ${partial}) = ${rotaryDim} must be even and ≥ 2`,
      );
    }
    tableDim = rotaryDim;
  }

  const maxPositionEmbeddings = present(root.max_position_embeddings)
    ? num(root.max_position_embeddings, `${prefix}max_position_embeddings`, { positive: true, integer: true })
    : null;

  // original_max_position_embeddings: inside the RoPE dict or top level; both must agree.
  const l0 = (): { value: number; key: string } | null => {
    const inner = rope.original_max_position_embeddings;
    const outer = root.original_max_position_embeddings;
    const innerKey = `${ropeKey}.original_max_position_embeddings`;
    const outerKey = `${prefix}original_max_position_embeddings`;
    const a = present(inner) ? num(inner, innerKey, { positive: true, integer: true }) : null;
    const b = present(outer) ? num(outer, outerKey, { positive: true, integer: true }) : null;
    if (a !== null && b !== null && a !== b) throw new RopeConfigError('conflict', innerKey, `is ${a} but ${outerKey} is ${b}`);
    if (a !== null) return { value: a, key: innerKey };
    if (b !== null) return { value: b, key: outerKey };
    return null;
  };
  const optNum = (name: string, o: { positive?: boolean } = {}): number | null =>
    present(rope[name]) ? num(rope[name], `${ropeKey}.${name}`, o) : null;
  const factorOf = (what: string): number => num(required(rope, 'factor', ropeKey, what), `${ropeKey}.factor`, { positive: true });

  let positionScale = 1;
  if (present(root.rope_position_scale) && type !== 'longrope') {
    positionScale = num(root.rope_position_scale, `${prefix}rope_position_scale`, { positive: true });
  }

  let scaling: RopeScaling;
  switch (type) {
    case 'default':
      // No scaling block (rope_scaling null or absent) means plain RoPE even when max_position_embeddings
      // exceeds original_max_position_embeddings: that is what Hugging Face transformers and mlx-lm run
      // for such a config, so the engine follows them rather than refusing it.
      scaling = { type };
      break;
    case 'linear':
      scaling = { type, factor: factorOf('linear RoPE scaling') };
      break;
    case 'dynamic': {
      const factor = factorOf('dynamic NTK scaling');
      const o = l0()?.value ?? maxPositionEmbeddings;
      if (o === null) {
        throw new RopeConfigError('missing_key', `${prefix}max_position_embeddings`, 'dynamic NTK needs original_max_position_embeddings or max_position_embeddings');
      }
      if (rotaryDim <= 2) throw new RopeConfigError('invalid_value', headDimKey, `dynamic NTK needs a rotary dim > 2, got ${rotaryDim}`);
      scaling = { type, factor, originalMaxPositionEmbeddings: o };
      break;
    }
    case 'yarn': {
      const factor = factorOf('YaRN');
      const o = l0()?.value ?? maxPositionEmbeddings;
      if (o === null) {
        throw new RopeConfigError('missing_key', `${prefix}max_position_embeddings`, 'YaRN needs original_max_position_embeddings or max_position_embeddings');
      }
      const betaFast = optNum('beta_fast', { positive: true }) ?? 32;
      const betaSlow = optNum('beta_slow', { positive: true }) ?? 1;
      let truncate = true;
      if (present(rope.truncate)) {
        if (typeof rope.truncate !== 'boolean') throw new RopeConfigError('invalid_value', `${ropeKey}.truncate`, `expected a boolean, got ${describe(rope.truncate)}`);
        truncate = rope.truncate;
      }
      const explicit = optNum('attention_factor', { positive: true });
      const mscale = optNum('mscale');
      const mscaleAllDim = optNum('mscale_all_dim');
      const attentionFactor =
        explicit ?? (mscale && mscaleAllDim ? yarnMscale(factor, mscale) / yarnMscale(factor, mscaleAllDim) : yarnMscale(factor));
      if (!Number.isFinite(attentionFactor) || !(attentionFactor > 0)) {
        throw new RopeConfigError('invalid_value', `${ropeKey}.mscale`, `gives a non-positive attention factor ${attentionFactor}`);
      }
      scaling = { type, factor, originalMaxPositionEmbeddings: o, betaFast, betaSlow, truncate, attentionFactor };
      break;
    }
    case 'llama3': {
      const factor = factorOf('Llama 3 scaling');
      const low = num(required(rope, 'low_freq_factor', ropeKey, 'Llama 3 scaling'), `${ropeKey}.low_freq_factor`, { positive: true });
      const high = num(required(rope, 'high_freq_factor', ropeKey, 'Llama 3 scaling'), `${ropeKey}.high_freq_factor`, { positive: true });
      if (!(high > low)) {
        throw new RopeConfigError('invalid_value', `${ropeKey}.high_freq_factor`, `must be > low_freq_factor (${low}), got ${high}`);
      }
      const o = l0();
      if (!o) throw new RopeConfigError('missing_key', `${ropeKey}.original_max_position_embeddings`, 'required for Llama 3 scaling');
      scaling = { type, factor, lowFreqFactor: low, highFreqFactor: high, originalMaxPositionEmbeddings: o.value };
      break;
    }
    case 'longrope': {
      const pairs = rotaryDim / 2;
      const shortFactor = factorList(rope, 'short_factor', ropeKey, pairs, rotaryDim);
      const longFactor = factorList(rope, 'long_factor', ropeKey, pairs, rotaryDim);
      const o = l0();
      if (!o) {
        throw new RopeConfigError(
          'missing_key',
          `${prefix}original_max_position_embeddings`,
          `LongRoPE needs the pretraining context L₀ (top level or ${ropeKey}.original_max_position_embeddings)`,
        );
      }
      const L0 = o.value;
      const explicit = optNum('attention_factor', { positive: true });
      let formula: number;
      if (explicit !== null) {
        formula = explicit;
      } else {
        let s: number;
        const f = optNum('factor', { positive: true });
        if (f !== null) s = f;
        else {
          if (maxPositionEmbeddings === null) {
            throw new RopeConfigError('missing_key', `${prefix}max_position_embeddings`, 'LongRoPE needs it for the attention factor sqrt(1 + ln(L / L₀) / ln L₀)');
          }
          s = maxPositionEmbeddings / L0;
        }
        formula = s <= 1 ? 1 : Math.sqrt(1 + Math.log(s) / Math.log(L0));
      }
      const phi3small = modelType === 'phi3small' || present(root.rope_embedding_base);
      // Phi-3-small's remote code treats a non-positive mscale as unset.
      const mscale = (name: string): number | null => {
        const v = optNum(name, phi3small ? {} : { positive: true });
        return v !== null && v > 0 ? v : null;
      };
      const sm = mscale('short_mscale');
      const lm = mscale('long_mscale');
      let policy: LongRopePolicy = options.longropePolicy ?? 'hf';
      if (policy !== 'hf' && policy !== 'long-only') throw new RangeError(`parseRope: longropePolicy must be 'hf' or 'long-only', got ${String(policy)}`);
      scaling = {
        type,
        shortFactor,
        longFactor,
        originalMaxPositionEmbeddings: L0,
        shortMscale: sm ?? (phi3small ? 1 : formula),
        longMscale: lm ?? formula,
        shortMscaleSource: sm !== null ? 'explicit' : phi3small ? 'one' : explicit !== null ? 'explicit' : 'formula',
        longMscaleSource: lm !== null || explicit !== null ? 'explicit' : 'formula',
        policy,
      };
      break;
    }
    case 'proportional': {
      const factor = optNum('factor', { positive: true }) ?? 1;
      scaling = { type, factor, rotatedPairs };
      break;
    }
  }

  const layout = options.layout ?? 'half';
  if (layout !== 'half' && layout !== 'interleaved') throw new RangeError(`parseRope: layout must be 'half' or 'interleaved', got ${String(layout)}`);

  const hashed = {
    type,
    theta,
    headDim,
    rotaryDim,
    tableDim,
    layout,
    positionScale,
    scaling: { ...scaling, policy: undefined, shortMscaleSource: undefined, longMscaleSource: undefined },
  };
  const hash = createHash('sha256').update(JSON.stringify(hashed)).digest('hex').slice(0, 16);

  const data: RopeSpecData = {
    type,
    theta,
    headDim,
    rotaryDim,
    tableDim,
    partialRotaryFactor: partial,
    layout,
    positionScale,
    maxPositionEmbeddings,
    layerType,
    scaling: Object.freeze(
      scaling.type === 'longrope'
        ? { ...scaling, shortFactor: Object.freeze(scaling.shortFactor.slice()), longFactor: Object.freeze(scaling.longFactor.slice()) }
        : scaling,
    ),
    hash,
  };
  const spec: RopeSpec = {
    ...data,
    regimeFor(totalLength: number) {
      return regimeFor(spec, totalLength);
    },
  };
  return Object.freeze(spec);
}

/**
 * One RopeSpec per layer: uses `layer_types` when present (specs are shared between layers of equal
 * parameters), otherwise `num_hidden_layers` copies of the single spec.
 */
export function parseRopeLayers(config: unknown, options: Omit<ParseRopeOptions, 'layerType' | 'layerIndex'> = {}): RopeSpec[] {
  if (!isObject(config)) throw new RopeConfigError('invalid_config', '(config)', `expected a JSON object, got ${describe(config)}`);
  const root = isObject(config.text_config) ? config.text_config : config;
  const prefix = root === config ? '' : 'text_config.';
  const byHash = new Map<string, RopeSpec>();
  const share = (s: RopeSpec): RopeSpec => {
    const k = `${s.hash}|${s.layerType}`;
    const prev = byHash.get(k);
    if (prev) return prev;
    byHash.set(k, s);
    return s;
  };
  if (Array.isArray(root.layer_types)) {
    const n = root.layer_types.length;
    if (present(root.num_hidden_layers) && root.num_hidden_layers !== n) {
      throw new RopeConfigError('conflict', `${prefix}layer_types`, `has ${n} entries but num_hidden_layers is ${String(root.num_hidden_layers)}`);
    }
    return Array.from({ length: n }, (_, i) => share(parseRope(config, { ...options, layerIndex: i })));
  }
  if (!present(root.num_hidden_layers)) {
    throw new RopeConfigError('missing_key', `${prefix}num_hidden_layers`, 'needed to list per-layer RoPE (no layer_types either)');
  }
  const n = num(root.num_hidden_layers, `${prefix}num_hidden_layers`, { positive: true, integer: true });
  const spec = parseRope(config, options);
  return Array.from({ length: n }, () => spec);
}
