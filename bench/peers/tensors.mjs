// Tensors of our random checkpoints (an engine WeightStore) as GGUF tensors: MLX affine 4-/8-bit codes
// repacked into Q4_0 / Q8_0 blocks with the same codes and group scales, float tensors as F32.
// Q4_0 / Q8_0 are symmetric (value = d * (q - 8) / d * q) where MLX affine is s * q + b, so the GGUF holds
// the same codes and scales without the per-group offset: the same bytes per weight and the same
// arithmetic per weight, which is what a throughput comparison needs.
import * as native from '../../packages/core-native/lib/index.js';
import { GGML } from './gguf.mjs';

const DTYPE_CODE = { F32: 0, F16: 1, BF16: 2 };

function asF32(t) {
  const n = t.shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(n);
  native.toF32(t.bytes, DTYPE_CODE[t.dtype], n, out);
  return out;
}

/** f32 values -> f16 bit patterns. */
function f16(values) {
  const out = new Uint16Array(values.length);
  native.fromF32(values, 1, out);
  return out;
}

/** A float tensor of the store, written F32 with ne = reversed HF shape. */
export function floatTensor(store, name, ggufName) {
  const t = store.get(name);
  return {
    name: ggufName, type: GGML.F32, ne: [...t.shape].reverse(),
    write: (emit) => emit(new Uint8Array(asF32(store.get(name)).buffer)),
  };
}

/** An F32 tensor from given values. */
export function valuesTensor(ggufName, ne, values) {
  const data = Float32Array.from(values);
  return { name: ggufName, type: GGML.F32, ne, write: (emit) => emit(new Uint8Array(data.buffer)) };
}

/** The row layout of a quantized module `path` ([rows, cols] after flattening leading dims). */
function quantLayout(store, path, bits) {
  const codes = store.get(`${path}.weight`);
  const scales = store.get(`${path}.scales`);
  const cols = (codes.shape[codes.shape.length - 1] * 32) / bits;
  const gpr = scales.shape[scales.shape.length - 1];
  const rows = codes.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  return { rows, cols, group: cols / gpr };
}

/** Whether `path` is stored as an MLX affine module (codes + scales + biases). */
export function isQuantized(store, path) {
  return store.has(`${path}.scales`);
}

/**
 * Writes rows [0, rows) of quantized module `path` as `qtype` blocks through emit, then `padRows`
 * all-zero rows (d = 0). bits: 4 (-> Q4_0) or 8 (-> Q8_0).
 */
function emitQuantRows(store, path, bits, emit, padRows = 0) {
  const qtype = bits === 4 ? GGML.Q4_0 : GGML.Q8_0;
  const { rows, cols, group } = quantLayout(store, path, bits);
  if (group % 32 !== 0) throw new Error(`${path}: group ${group} is not a multiple of 32`);
  const codes = store.get(`${path}.weight`).bytes;
  const scales = asF32(store.get(`${path}.scales`));
  const rowBytes = (cols * bits) / 8, blocks = cols / 32, gpr = cols / group, outRow = blocks * qtype.bytes;
  const chunkRows = Math.max(1, Math.floor((4 << 20) / outRow));
  for (let r0 = 0; r0 < rows; r0 += chunkRows) {
    const nr = Math.min(chunkRows, rows - r0);
    const out = new Uint8Array(nr * outRow);
    const d = f16(scales.subarray(r0 * gpr, (r0 + nr) * gpr));
    for (let r = 0; r < nr; r++) {
      const src = (r0 + r) * rowBytes;
      for (let b = 0; b < blocks; b++) {
        const o = r * outRow + b * qtype.bytes;
        const h = d[r * gpr + Math.floor((b * 32) / group)];
        out[o] = h & 255;
        out[o + 1] = h >> 8;
        if (bits === 4) {
          // MLX: element e is nibble (e & 1) of byte e >> 1. Q4_0: byte j holds elements j (low) and j + 16 (high).
          const base = src + b * 16;
          for (let j = 0; j < 16; j++) {
            const lo = (codes[base + (j >> 1)] >> ((j & 1) * 4)) & 15;
            const hi = (codes[base + 8 + (j >> 1)] >> ((j & 1) * 4)) & 15;
            out[o + 2 + j] = lo | (hi << 4);
          }
        } else {
          const base = src + b * 32;
          for (let j = 0; j < 32; j++) out[o + 2 + j] = (codes[base + j] - 128) & 255; // int8 q - 128
        }
      }
    }
    emit(out);
  }
  if (padRows) {
    const zeros = new Uint8Array(Math.min(padRows, chunkRows) * outRow);
    for (let left = padRows; left > 0; left -= chunkRows) emit(left >= chunkRows ? zeros : zeros.subarray(0, left * outRow));
  }
}

/**
 * Module `path` ([rows, cols] in HF order) as a GGUF tensor ne = [cols, rows + padRows]: Q4_0 / Q8_0
 * when stored quantized, else F32.
 */
export function moduleTensor(store, path, ggufName, bits, { padRows = 0 } = {}) {
  if (!isQuantized(store, path)) {
    if (padRows) throw new Error(`${path}: row padding needs a quantized module`);
    return floatTensor(store, `${path}.weight`, ggufName);
  }
  const { rows, cols } = quantLayout(store, path, bits);
  return {
    name: ggufName, type: bits === 4 ? GGML.Q4_0 : GGML.Q8_0, ne: [cols, rows + padRows],
    write: (emit) => emitQuantRows(store, path, bits, emit, padRows),
  };
}

/** Several quantized [rows, cols] modules stacked along a new outer dim: ne = [cols, rows, n]. */
export function stackedModuleTensor(store, paths, ggufName, bits) {
  const { rows, cols } = quantLayout(store, paths[0], bits);
  return {
    name: ggufName, type: bits === 4 ? GGML.Q4_0 : GGML.Q8_0, ne: [cols, rows, paths.length],
    write: (emit) => { for (const p of paths) emitQuantRows(store, p, bits, emit); },
  };
}

/** An all-zero quantized tensor ne = [cols, rows] (weights llama.cpp requires but never reads). */
export function zeroTensor(ggufName, cols, rows, bits) {
  const type = bits === 4 ? GGML.Q4_0 : GGML.Q8_0;
  const rowBytes = (cols / 32) * type.bytes;
  return { name: ggufName, type, ne: [cols, rows], write: (emit) => emit(new Uint8Array(rows * rowBytes)) };
}
