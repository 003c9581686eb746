import * as native from '@mlxcel/core-native';
import { dtypeBytes, floatCode, type DType } from './dtype.js';
import { MlxcelError } from './errors.js';

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * A dense tensor: dtype, shape and the raw little-endian bytes (often a zero-copy view of an mmapped
 * checkpoint, so not necessarily aligned to the element size). Activations in mlxcel are f32
 * `Float32Array`s; `Tensor` is how weights and file contents travel.
 */
export class Tensor {
  constructor(
    readonly dtype: DType,
    readonly shape: readonly number[],
    readonly bytes: Uint8Array,
  ) {
    const need = numel(shape) * dtypeBytes(dtype);
    if (bytes.byteLength !== need)
      throw new MlxcelError('E_SHAPE', `Tensor: ${bytes.byteLength} bytes do not match ${dtype}[${shape.join(', ')}] (${need} bytes)`);
  }

  static fromF32(data: Float32Array, shape: readonly number[]): Tensor {
    return new Tensor('F32', shape, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }

  static fromI32(data: Int32Array, shape: readonly number[] = [data.length]): Tensor {
    return new Tensor('I32', shape, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }

  get size(): number {
    return numel(this.shape);
  }

  get ndim(): number {
    return this.shape.length;
  }

  /** The values as f32: a zero-copy view for aligned F32 data, a converted copy otherwise. */
  toF32(): Float32Array {
    const n = this.size;
    if (this.dtype === 'F32') {
      if (this.bytes.byteOffset % 4 === 0) return new Float32Array(this.bytes.buffer, this.bytes.byteOffset, n);
      return new Float32Array(this.bytes.slice().buffer);
    }
    if (this.dtype === 'F16' || this.dtype === 'BF16') {
      const out = new Float32Array(n);
      native.toF32(this.bytes, floatCode(this.dtype, 'Tensor.toF32'), n, out);
      return out;
    }
    const dv = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    const out = new Float32Array(n);
    const sz = dtypeBytes(this.dtype);
    for (let i = 0; i < n; i++) out[i] = readNumber(dv, this.dtype, i * sz);
    return out;
  }

  /** The values as int32 (I32/I64/U32/U8/...); throws for floats. */
  toI32(): Int32Array {
    if (this.dtype === 'I32' && this.bytes.byteOffset % 4 === 0)
      return new Int32Array(this.bytes.buffer, this.bytes.byteOffset, this.size);
    if (this.dtype === 'F32' || this.dtype === 'F16' || this.dtype === 'BF16' || this.dtype === 'F64')
      throw new MlxcelError('E_DTYPE', `Tensor.toI32: ${this.dtype} is not an integer dtype`);
    const dv = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    const out = new Int32Array(this.size);
    const sz = dtypeBytes(this.dtype);
    for (let i = 0; i < out.length; i++) {
      const v = readNumber(dv, this.dtype, i * sz);
      // Refuse rather than wrap: an I64 id 2^40 + 5 must not come out as 5.
      if (v !== (v | 0)) throw new MlxcelError('E_RANGE', `Tensor.toI32: element ${i} = ${v} (${this.dtype}) does not fit int32`);
      out[i] = v;
    }
    return out;
  }

  /** A view with another shape of the same element count. */
  reshape(shape: readonly number[]): Tensor {
    if (numel(shape) !== this.size)
      throw new MlxcelError('E_SHAPE', `reshape: [${this.shape}] has ${this.size} elements, [${shape}] has ${numel(shape)}`);
    return new Tensor(this.dtype, shape, this.bytes);
  }

  /** Zero-copy view of index i along the first axis. */
  index(i: number): Tensor {
    const inner = this.shape.slice(1);
    const stride = numel(inner) * dtypeBytes(this.dtype);
    if (!Number.isInteger(i) || i < 0 || i >= (this.shape[0] ?? 0))
      throw new MlxcelError('E_SHAPE', `index ${i} is outside the first axis of [${this.shape}]`);
    return new Tensor(this.dtype, inner, this.bytes.subarray(i * stride, (i + 1) * stride));
  }
}

function readNumber(dv: DataView, d: DType, off: number): number {
  switch (d) {
    case 'F64': return dv.getFloat64(off, true);
    case 'F32': return dv.getFloat32(off, true);
    case 'I8': return dv.getInt8(off);
    case 'U8': case 'BOOL': return dv.getUint8(off);
    case 'I16': return dv.getInt16(off, true);
    case 'U16': return dv.getUint16(off, true);
    case 'I32': return dv.getInt32(off, true);
    case 'U32': return dv.getUint32(off, true);
    // Past 2^53 Number() rounds; the value is still far outside int32, which toI32 refuses.
    case 'I64': return Number(dv.getBigInt64(off, true));
    case 'U64': return Number(dv.getBigUint64(off, true));
    default: throw new MlxcelError('E_DTYPE', `cannot read ${d} as a number`);
  }
}
