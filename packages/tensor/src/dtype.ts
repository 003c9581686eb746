import { MlxcelError } from './errors.js';

/** safetensors dtype strings this library reads. */
export type DType =
  | 'F32' | 'F16' | 'BF16' | 'F64'
  | 'I8' | 'U8' | 'I16' | 'U16' | 'I32' | 'U32' | 'I64' | 'U64' | 'BOOL';

const BYTES: Record<DType, number> = {
  F32: 4, F16: 2, BF16: 2, F64: 8, I8: 1, U8: 1, I16: 2, U16: 2, I32: 4, U32: 4, I64: 8, U64: 8, BOOL: 1,
};

/** Other dtype strings of the safetensors format: recognised so the error can say "unsupported" precisely. */
const KNOWN_UNSUPPORTED = new Set([
  'F8_E4M3', 'F8_E5M2', 'F8_E8M0', 'F8_E4M3FNUZ', 'F8_E5M2FNUZ', 'C64', 'F4', 'F6_E2M3', 'F6_E3M2',
]);

export function isDType(s: string): s is DType {
  return Object.prototype.hasOwnProperty.call(BYTES, s);
}

export function dtypeBytes(d: DType): number {
  return BYTES[d];
}

export function checkDType(s: unknown, where: string): DType {
  if (typeof s === 'string' && isDType(s)) return s;
  if (typeof s === 'string' && KNOWN_UNSUPPORTED.has(s))
    throw new MlxcelError('E_DTYPE', `${where}: dtype ${s} is valid safetensors but not supported by mlxcel`);
  throw new MlxcelError('E_DTYPE', `${where}: unknown dtype ${JSON.stringify(s)}`);
}

/** Native kernel dtype code for float storage (F32 0, F16 1, BF16 2). */
export function floatCode(d: DType, where: string): 0 | 1 | 2 {
  if (d === 'F32') return 0;
  if (d === 'F16') return 1;
  if (d === 'BF16') return 2;
  throw new MlxcelError('E_DTYPE', `${where}: expected F32, F16 or BF16, got ${d}`);
}
