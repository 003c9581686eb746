// A small GGUF (v3) writer for the peer benchmark: metadata key/values, tensor infos, then the tensor
// data, each tensor aligned to 32 bytes (GGUF's default `general.alignment`). Tensors are streamed to
// the file one at a time, so a multi-GB model never sits in memory whole.
// Layout reference: ggml-org/llama.cpp ggml/include/gguf.h and gguf-py/gguf/gguf_writer.py.
import { closeSync, openSync, renameSync, writeSync } from 'node:fs';

/** GGUF metadata value types (gguf.h `enum gguf_type`). */
export const T = { U8: 0, I8: 1, U16: 2, I16: 3, U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9, U64: 10, I64: 11, F64: 12 };
/** The ggml tensor types written here (ggml.h `enum ggml_type`), with their block size and bytes per block. */
export const GGML = {
  F32: { id: 0, block: 1, bytes: 4 },
  F16: { id: 1, block: 1, bytes: 2 },
  Q4_0: { id: 2, block: 32, bytes: 18 }, // f16 scale d + 16 bytes of 4-bit codes; value = d * (q - 8)
  Q8_0: { id: 8, block: 32, bytes: 34 }, // f16 scale d + 32 int8 codes; value = d * q
};
const ALIGN = 32;

/** A metadata value: { type, value } (arrays: { type: T.ARRAY, of, value: [...] }). */
export const kv = {
  u32: (v) => ({ type: T.U32, value: v }),
  i32: (v) => ({ type: T.I32, value: v }),
  f32: (v) => ({ type: T.F32, value: v }),
  bool: (v) => ({ type: T.BOOL, value: v }),
  str: (v) => ({ type: T.STRING, value: v }),
  arr: (of, value) => ({ type: T.ARRAY, of, value }),
};

class Bytes {
  constructor() { this.parts = []; this.length = 0; }
  push(buf) { this.parts.push(buf); this.length += buf.length; }
  u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); this.push(b); }
  u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.push(b); }
  str(s) { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.push(b); }
  scalar(type, v) {
    const b = Buffer.alloc(type === T.U64 || type === T.I64 || type === T.F64 ? 8 : type === T.U16 || type === T.I16 ? 2 : type === T.U8 || type === T.I8 || type === T.BOOL ? 1 : 4);
    switch (type) {
      case T.U8: b.writeUInt8(v); break;
      case T.I8: b.writeInt8(v); break;
      case T.U16: b.writeUInt16LE(v); break;
      case T.I16: b.writeInt16LE(v); break;
      case T.U32: b.writeUInt32LE(v); break;
      case T.I32: b.writeInt32LE(v); break;
      case T.F32: b.writeFloatLE(v); break;
      case T.BOOL: b.writeUInt8(v ? 1 : 0); break;
      case T.F64: b.writeDoubleLE(v); break;
      default: throw new Error(`gguf: scalar type ${type} not supported`);
    }
    this.push(b);
  }
  value(v) {
    if (v.type === T.STRING) return this.str(v.value);
    if (v.type !== T.ARRAY) return this.scalar(v.type, v.value);
    this.u32(v.of);
    this.u64(v.value.length);
    for (const e of v.value) (v.of === T.STRING ? this.str(e) : this.scalar(v.of, e));
  }
  buffer() { return Buffer.concat(this.parts, this.length); }
}

/** Bytes of a tensor of ggml type `type` with dims `ne` (ne[0] = the contiguous dim). */
export function tensorBytes(type, ne) {
  if (ne[0] % type.block !== 0) throw new Error(`gguf: ne[0] = ${ne[0]} is not a multiple of the block size ${type.block}`);
  return (ne.reduce((a, b) => a * b, 1) / type.block) * type.bytes;
}

/**
 * Writes a GGUF file. `tensors`: [{ name, type (a GGML entry), ne: number[] (ne[0] contiguous), write(emit) }],
 * where write calls emit(Uint8Array) with the tensor's bytes in order (any number of chunks) and must
 * emit exactly tensorBytes(type, ne) bytes. Written to `path.tmp` and renamed when complete.
 */
export function writeGguf(path, metadata, tensors) {
  const head = new Bytes();
  head.push(Buffer.from('GGUF', 'ascii'));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(Object.keys(metadata).length);
  for (const [key, v] of Object.entries(metadata)) {
    head.str(key);
    head.u32(v.type);
    head.value(v);
  }
  let offset = 0;
  const sizes = [];
  for (const t of tensors) {
    const size = tensorBytes(t.type, t.ne);
    sizes.push(size);
    head.str(t.name);
    head.u32(t.ne.length);
    for (const d of t.ne) head.u64(d);
    head.u32(t.type.id);
    head.u64(offset);
    offset += Math.ceil(size / ALIGN) * ALIGN;
  }
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    let pos = 0;
    const put = (buf) => { writeSync(fd, buf); pos += buf.length; };
    const pad = () => { const r = pos % ALIGN; if (r) put(Buffer.alloc(ALIGN - r)); };
    put(head.buffer());
    pad();
    tensors.forEach((t, i) => {
      const start = pos;
      t.write((chunk) => put(chunk));
      if (pos - start !== sizes[i]) throw new Error(`gguf: tensor ${t.name} wrote ${pos - start} bytes, expected ${sizes[i]}`);
      pad();
    });
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
