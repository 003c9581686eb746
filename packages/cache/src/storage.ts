/**
 * Storage formats of a KV cache and how they map onto the native store codes.
 *
 * - 'f32' | 'f16' | 'bf16': keys and values converted on write, read directly by the kernel.
 * - 'q8': MLX affine 8-bit K and V, one f32 scale and bias per `groupSize` elements along the head dim.
 * - 'k8v4': 8-bit K, 4-bit V (keys are the more sensitive half: their errors go through the softmax).
 */
import { MlxcelError } from '@mlxcel/tensor';

export type FloatDtype = 'f32' | 'f16' | 'bf16';
export type KvStorage = FloatDtype | 'q8' | 'k8v4';
export type GroupSize = 32 | 64 | 128;

export const KV_STORAGES: readonly KvStorage[] = ['f32', 'f16', 'bf16', 'q8', 'k8v4'];

/** Resolved format of one store. */
export interface StoreFormat {
  storage: KvStorage;
  /** Native dtype code: 0 f32, 1 f16, 2 bf16, 3 affine-quantized. */
  code: 0 | 1 | 2 | 3;
  quantized: boolean;
  /** Bits per K / V element (32 or 16 for float storage). */
  kBits: number;
  vBits: number;
  /** Quantization group along the head dim (0 for float storage). */
  groupSize: 0 | GroupSize;
}

export function isKvStorage(s: unknown): s is KvStorage {
  return typeof s === 'string' && (KV_STORAGES as readonly string[]).includes(s);
}

export function checkStorage(s: unknown, who: string): KvStorage {
  if (!isKvStorage(s))
    throw new MlxcelError('E_CACHE_STORAGE', `${who}: storage ${JSON.stringify(s)} is not one of ${KV_STORAGES.join(', ')}`);
  return s;
}

/**
 * The format for a storage kind and head geometry. Quantized storage needs head dims that are a
 * multiple of the group; without an explicit group the largest of 64 (the MLX default) and 32 that
 * divides both dims is used.
 */
export function storeFormat(storage: KvStorage, headDim: number, vDim: number, groupSize?: number, who = 'cache'): StoreFormat {
  switch (storage) {
    case 'f32':
      return { storage, code: 0, quantized: false, kBits: 32, vBits: 32, groupSize: 0 };
    case 'f16':
      return { storage, code: 1, quantized: false, kBits: 16, vBits: 16, groupSize: 0 };
    case 'bf16':
      return { storage, code: 2, quantized: false, kBits: 16, vBits: 16, groupSize: 0 };
    case 'q8':
    case 'k8v4': {
      let g = groupSize;
      if (g === undefined) g = [64, 32].find((c) => headDim % c === 0 && vDim % c === 0);
      if (g === undefined)
        throw new MlxcelError('E_CACHE_DIMS', `${who}: ${storage} storage needs headDim (${headDim}) and vDim (${vDim}) to be multiples of 32`);
      if (g !== 32 && g !== 64 && g !== 128)
        throw new MlxcelError('E_CACHE_DIMS', `${who}: groupSize ${g} is not 32, 64 or 128`);
      if (headDim % g !== 0 || vDim % g !== 0)
        throw new MlxcelError('E_CACHE_DIMS', `${who}: headDim ${headDim} and vDim ${vDim} must be multiples of groupSize ${g}`);
      return { storage, code: 3, quantized: true, kBits: 8, vBits: storage === 'q8' ? 8 : 4, groupSize: g };
    }
  }
}

/** The f32 format used for rows held past a cap (padding, drafts): exact, so trimming them is exact. */
export const STAGING_FORMAT: StoreFormat = storeFormat('f32', 1, 1);
