/**
 * Weights as the kernels read them: float (F32/F16/BF16, kept in the stored dtype) or MLX affine
 * quantized (packed U32 codes + per-group scales and biases). A weight may be stacked ([E, rows, cols],
 * as MoE experts are); `index(e)` gives a zero-copy view of one matrix.
 */
import type { NativeWeight } from '@mlxcel/core-native';
import * as native from '@mlxcel/core-native';
import { floatCode, dtypeBytes } from './dtype.js';
import { MlxcelError } from './errors.js';
import { numel, Tensor } from './tensor.js';

export interface QuantParams {
  bits: number;
  groupSize: number;
}

const VALID_BITS = new Set([2, 3, 4, 5, 6, 8]);
const VALID_GROUPS = new Set([32, 64, 128]);

export class Weight {
  protected constructor(
    /** Logical shape: [..., rows, cols]. */
    readonly shape: readonly number[],
    readonly native: NativeWeight,
  ) {}

  get rows(): number {
    return this.shape[this.shape.length - 2]!;
  }
  get cols(): number {
    return this.shape[this.shape.length - 1]!;
  }
  get quantized(): boolean {
    return this.native.dtype === 3;
  }
  /** Bytes the kernels stream per full pass over this weight. */
  get nbytes(): number {
    const n = this.native;
    const b = (x: ArrayBufferView | ArrayBuffer | undefined) => (x ? x.byteLength : 0);
    return b(n.data) + b(n.scales) + b(n.biases);
  }

  /** A float weight from an F32/F16/BF16 tensor of rank >= 2 (rank 1 is treated as one row). */
  static fromTensor(t: Tensor, name = 'weight'): Weight {
    const code = floatCode(t.dtype, name);
    const shape = t.shape.length === 1 ? [1, t.shape[0]!] : [...t.shape];
    return new Weight(shape, { dtype: code, data: t.bytes, rows: shape[shape.length - 2]!, cols: shape[shape.length - 1]! });
  }

  static fromF32(data: Float32Array, shape: readonly number[]): Weight {
    return Weight.fromTensor(Tensor.fromF32(data, shape));
  }

  /** Zero-copy view of matrix i of a stacked weight [E, rows, cols]. */
  index(i: number): Weight {
    if (this.shape.length < 3) throw new MlxcelError('E_SHAPE', `Weight.index: weight [${this.shape}] is not stacked`);
    if (this.native.layout === 1) throw new MlxcelError('E_SHAPE', 'Weight.index: a weight in the 16-row tile layout has no per-matrix views');
    const E = this.shape[0]!;
    if (!Number.isInteger(i) || i < 0 || i >= E) throw new MlxcelError('E_SHAPE', `Weight.index: ${i} outside [0, ${E})`);
    const inner = this.shape.slice(1);
    const slice = (v: ArrayBufferView | ArrayBuffer | undefined): Uint8Array | undefined => {
      if (!v) return undefined;
      const u8 = v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
      const per = u8.byteLength / E;
      return u8.subarray(i * per, (i + 1) * per);
    };
    const n = this.native;
    return new Weight(inner, { ...n, data: slice(n.data)!, scales: slice(n.scales), biases: slice(n.biases) });
  }

  /** The whole weight as f32 (tests, tied heads of small models, conversion). */
  dequantize(): Float32Array {
    const rows = numel(this.shape.slice(0, -1));
    const out = new Float32Array(rows * this.cols);
    const flat = new Weight([rows, this.cols], { ...this.native, rows });
    const ids = new Int32Array(rows);
    for (let i = 0; i < rows; i++) ids[i] = i;
    native.gather(ids, flat.native, out);
    return out;
  }
}

/** An MLX affine quantized weight: W[r, c] = scales[r, g] * q[r, c] + biases[r, g], g = floor(c / G). */
export class QuantizedWeight extends Weight {
  readonly bits: number;
  readonly groupSize: number;

  private constructor(shape: readonly number[], nw: NativeWeight, q: QuantParams) {
    super(shape, nw);
    this.bits = q.bits;
    this.groupSize = q.groupSize;
  }

  /**
   * From the three checkpoint tensors of a quantized module. Checks the MLX consistency rules:
   * weight [..., R, C*b/32] U32, scales/biases [..., R, C/G] identical, leading dims equal.
   */
  static fromTensors(weight: Tensor, scales: Tensor, biases: Tensor, q: QuantParams, name = 'weight'): QuantizedWeight {
    const { bits, groupSize } = q;
    if (!VALID_BITS.has(bits)) throw new MlxcelError('E_QUANT', `${name}: unsupported quantization bits ${bits} (2, 3, 4, 5, 6 or 8)`);
    if (!VALID_GROUPS.has(groupSize)) throw new MlxcelError('E_QUANT', `${name}: unsupported group size ${groupSize} (32, 64 or 128)`);
    if (weight.dtype !== 'U32') throw new MlxcelError('E_QUANT', `${name}.weight: packed quantized weights must be U32, got ${weight.dtype}`);
    const sd = floatCode(scales.dtype, `${name}.scales`);
    if (biases.dtype !== scales.dtype || biases.shape.join() !== scales.shape.join())
      throw new MlxcelError('E_QUANT', `${name}: scales [${scales.shape}] ${scales.dtype} and biases [${biases.shape}] ${biases.dtype} differ`);
    const ws = weight.shape, ss = scales.shape;
    if (ws.length < 2 || ws.length !== ss.length || ws.slice(0, -1).join() !== ss.slice(0, -1).join())
      throw new MlxcelError('E_QUANT', `${name}: weight [${ws}] and scales [${ss}] leading dims differ`);
    const cols = (ws[ws.length - 1]! * 32) / bits;
    if (!Number.isInteger(cols) || cols !== ss[ss.length - 1]! * groupSize)
      throw new MlxcelError(
        'E_QUANT',
        `${name}: packed width ${ws[ws.length - 1]} x 32/${bits} != scales width ${ss[ss.length - 1]} x ${groupSize} (wrong bits/group_size in config?)`,
      );
    const shape = [...ws.slice(0, -1), cols];
    return new QuantizedWeight(
      shape,
      {
        dtype: 3, data: weight.bytes, rows: shape[shape.length - 2]!, cols,
        scales: scales.bytes, biases: biases.bytes, scaleDtype: sd, bits: bits as 4, groupSize: groupSize as 64,
      },
      q,
    );
  }

  /** Quantizes f32 [rows, cols] (or stacked) with MLX's affine quantizer; scales/biases stored in `scaleDtype`. */
  static quantize(data: Float32Array, shape: readonly number[], q: QuantParams, scaleDtype: 'F32' | 'F16' | 'BF16' = 'F32'): {
    weight: QuantizedWeight; packed: Tensor; scales: Tensor; biases: Tensor;
  } {
    const cols = shape[shape.length - 1]!;
    const rows = numel(shape.slice(0, -1));
    if (cols % q.groupSize) throw new MlxcelError('E_QUANT', `quantize: cols ${cols} not a multiple of group ${q.groupSize}`);
    const words = new Uint32Array((rows * cols * q.bits) / 32);
    const s = new Float32Array((rows * cols) / q.groupSize);
    const b = new Float32Array(s.length);
    native.quantize(data, rows, cols, q.bits, q.groupSize, words, s, b);
    const lead = shape.slice(0, -1);
    const packed = new Tensor('U32', [...lead, (cols * q.bits) / 32], new Uint8Array(words.buffer));
    const toDt = (x: Float32Array): Tensor => {
      const sh = [...lead, cols / q.groupSize];
      if (scaleDtype === 'F32') return Tensor.fromF32(x, sh);
      const h = new Uint16Array(x.length);
      native.fromF32(x, scaleDtype === 'F16' ? 1 : 2, h);
      return new Tensor(scaleDtype, sh, new Uint8Array(h.buffer));
    };
    const scales = toDt(s), biases = toDt(b);
    return { weight: QuantizedWeight.fromTensors(packed, scales, biases, q), packed, scales, biases };
  }
}

export function bytesPerElement(w: Weight): number {
  return w.quantized ? (w as QuantizedWeight).bits / 8 : dtypeBytes(w.native.dtype === 0 ? 'F32' : 'F16');
}
