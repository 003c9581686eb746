// An independent safetensors decoder for the tests: reads the raw bytes of a file with node:fs and
// parses the header itself (8-byte little-endian length, JSON, data buffer after it), then decodes
// values with DataView. It shares no code with src/ (nor with the native addon).
import { readFileSync } from 'node:fs';

export interface RawTensor {
  dtype: string;
  shape: number[];
  bytes: Uint8Array;
}

export function readRaw(path: string): { tensors: Map<string, RawTensor>; metadata: Record<string, string> | undefined; headerLength: number } {
  const buf = readFileSync(path);
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  const header = JSON.parse(Buffer.from(bytes.subarray(8, 8 + n)).toString('utf8')) as Record<string, unknown>;
  const tensors = new Map<string, RawTensor>();
  let metadata: Record<string, string> | undefined;
  for (const [name, e] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = e as Record<string, string>;
      continue;
    }
    const { dtype, shape, data_offsets } = e as { dtype: string; shape: number[]; data_offsets: [number, number] };
    tensors.set(name, { dtype, shape, bytes: bytes.subarray(8 + n + data_offsets[0], 8 + n + data_offsets[1]) });
  }
  return { tensors, metadata, headerLength: n };
}

function halfToNumber(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Element values of a float tensor (F32, F16, BF16) as float64. */
export function floatValues(t: RawTensor): Float64Array {
  const dv = new DataView(t.bytes.buffer, t.bytes.byteOffset, t.bytes.byteLength);
  const size = t.dtype === 'F32' ? 4 : 2;
  const out = new Float64Array(t.bytes.byteLength / size);
  for (let i = 0; i < out.length; i++) {
    if (t.dtype === 'F32') out[i] = dv.getFloat32(4 * i, true);
    else if (t.dtype === 'BF16') {
      const f = new DataView(new ArrayBuffer(4));
      f.setUint16(0, dv.getUint16(2 * i, true), false); // the bf16 bits are the high half of an f32 (big-endian view)
      out[i] = f.getFloat32(0, false);
    } else if (t.dtype === 'F16') out[i] = halfToNumber(dv.getUint16(2 * i, true));
    else throw new Error(`floatValues: ${t.dtype} is not a float dtype`);
  }
  return out;
}

/**
 * Dequantizes an MLX affine weight from its three raw tensors: for each row (all leading dims flattened),
 * code c is the `bits` bits starting at bit c*bits of the row's little-endian U32 words (LSB first);
 * W = scale * q + bias with the scale and bias of group floor(c / group). Returns W and |s*q| + |b|
 * (the magnitude the f32 evaluation rounds against).
 */
export function dequantRaw(w: RawTensor, s: RawTensor, b: RawTensor, bits: number, group: number) {
  const wordsPerRow = w.shape[w.shape.length - 1]!;
  const cols = (wordsPerRow * 32) / bits;
  const rows = w.bytes.byteLength / 4 / wordsPerRow;
  const dv = new DataView(w.bytes.buffer, w.bytes.byteOffset, w.bytes.byteLength);
  const sv = floatValues(s), bv = floatValues(b);
  const gpr = cols / group;
  const out = new Float64Array(rows * cols), mag = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) {
      let q = 0;
      for (let k = 0; k < bits; k++) {
        const bit = c * bits + k;
        const word = dv.getUint32(4 * (r * wordsPerRow + Math.floor(bit / 32)), true);
        q += ((word >>> (bit % 32)) & 1) * 2 ** k;
      }
      const g = r * gpr + Math.floor(c / group);
      out[r * cols + c] = sv[g]! * q + bv[g]!;
      mag[r * cols + c] = Math.abs(sv[g]! * q) + Math.abs(bv[g]!);
    }
  return { values: out, magnitude: mag, rows, cols };
}
