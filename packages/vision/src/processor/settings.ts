/**
 * Image processor settings read from a checkpoint's preprocessor_config.json (and processor_config.json,
 * whose `image_processor` block newer transformers versions write there instead), never hard-coded:
 * the defaults below are the processor classes' own defaults, used only for keys a file leaves out.
 */
import { MlxcelError } from '@mlxcel/tensor';
import { resampleFromCode, type ResampleFilter } from '../image/resize.js';

export type Json = Record<string, unknown>;

/** Gemma 4 soft-token budgets the processor accepts (Gemma4ImageProcessor raises on anything else). */
export const GEMMA4_BUDGETS = [70, 140, 280, 560, 1120] as const;

interface Common {
  resample: ResampleFilter;
  doResize: boolean;
  doRescale: boolean;
  rescaleFactor: number;
  doNormalize: boolean;
  /** Per-channel mean and std, applied only when doNormalize. */
  mean: [number, number, number];
  std: [number, number, number];
}

export interface Gemma3nProcessorSettings extends Common {
  family: 'gemma3n';
  /** Output size (the image is stretched to exactly this). */
  height: number;
  width: number;
  /** Soft tokens per image (placeholders the prompt gets). */
  imageSeqLength: number;
}

export interface Gemma4ProcessorSettings extends Common {
  family: 'gemma4';
  patchSize: number;
  poolingKernel: number;
  /** Default soft-token budget (max_soft_tokens); a request may pick another of GEMMA4_BUDGETS. */
  maxSoftTokens: number;
}

export type ProcessorSettings = Gemma3nProcessorSettings | Gemma4ProcessorSettings;

function reader(obj: Json, where: string) {
  const fail = (k: string, what: string): never => {
    throw new MlxcelError('E_CONFIG', `${where}: ${k} ${what}`);
  };
  return {
    bool: (k: string, d: boolean): boolean => {
      const v = obj[k];
      if (v === undefined || v === null) return d;
      if (typeof v !== 'boolean') fail(k, `must be a boolean, got ${JSON.stringify(v)}`);
      return v as boolean;
    },
    num: (k: string, d: number): number => {
      const v = obj[k] ?? d;
      if (typeof v !== 'number' || !Number.isFinite(v)) fail(k, `must be a finite number, got ${JSON.stringify(v)}`);
      return v as number;
    },
    int: (k: string, d: number): number => {
      const v = obj[k] ?? d;
      if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) fail(k, `must be a positive integer, got ${JSON.stringify(v)}`);
      return v as number;
    },
    triple: (k: string, d: number): [number, number, number] => {
      const v = obj[k] ?? [d, d, d];
      const arr = typeof v === 'number' ? [v, v, v] : v;
      if (!Array.isArray(arr) || arr.length !== 3 || !arr.every((x) => typeof x === 'number' && Number.isFinite(x)))
        fail(k, `must be a number or a list of 3 numbers, got ${JSON.stringify(v)}`);
      return arr as [number, number, number];
    },
  };
}

/** The image processor block: processor_config.json's `image_processor` overlaid by preprocessor_config.json. */
export function mergeProcessorFiles(preprocessor?: Json, processor?: Json): Json {
  const inner = processor && typeof processor.image_processor === 'object' && processor.image_processor !== null ? (processor.image_processor as Json) : {};
  return { ...inner, ...(preprocessor ?? {}) };
}

function common(r: ReturnType<typeof reader>, obj: Json, where: string, dflt: { resample: number }): Common {
  const std = r.triple('image_std', 1);
  if (std.some((s) => s === 0)) throw new MlxcelError('E_CONFIG', `${where}: image_std must not contain 0`);
  return {
    resample: resampleFromCode(obj.resample ?? dflt.resample, `${where}.resample`),
    doResize: r.bool('do_resize', true),
    doRescale: r.bool('do_rescale', true),
    rescaleFactor: r.num('rescale_factor', 1 / 255),
    doNormalize: r.bool('do_normalize', false),
    mean: r.triple('image_mean', 0),
    std,
  };
}

/** Gemma 3n (SiglipImageProcessorFast as convert_gemma3n_weights.py saves it). */
export function gemma3nProcessorSettings(obj: Json, where = 'preprocessor_config.json'): Gemma3nProcessorSettings {
  const r = reader(obj, where);
  const size = (obj.size ?? { height: 768, width: 768 }) as Json;
  if (typeof size !== 'object' || size === null) throw new MlxcelError('E_CONFIG', `${where}: size must be {"height", "width"}`);
  const sr = reader(size, `${where}.size`);
  return {
    family: 'gemma3n',
    ...common(r, obj, where, { resample: 2 }),
    height: sr.int('height', 768),
    width: sr.int('width', 768),
    imageSeqLength: r.int('image_seq_length', 256),
  };
}

/** Gemma 4 (Gemma4ImageProcessor). */
export function gemma4ProcessorSettings(obj: Json, where = 'preprocessor_config.json'): Gemma4ProcessorSettings {
  const r = reader(obj, where);
  const maxSoftTokens = r.int('max_soft_tokens', 280);
  checkBudget(maxSoftTokens, `${where}.max_soft_tokens`);
  return {
    family: 'gemma4',
    ...common(r, obj, where, { resample: 3 }),
    patchSize: r.int('patch_size', 16),
    poolingKernel: r.int('pooling_kernel_size', 3),
    maxSoftTokens,
  };
}

export function checkBudget(n: number, where: string): void {
  if (!(GEMMA4_BUDGETS as readonly number[]).includes(n))
    throw new MlxcelError('E_CONFIG', `${where}: ${n} is not a Gemma 4 soft-token budget (${GEMMA4_BUDGETS.join(', ')})`);
}
