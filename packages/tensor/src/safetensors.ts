/**
 * safetensors reading (mmap, strict header validation) and writing.
 * Validation follows the reference implementation: header length bounds, JSON object, known dtypes,
 * offsets in bounds, entries tiling the data buffer with no holes or overlaps, and size == dtype x shape.
 */
import { closeSync, openSync, writeSync, renameSync } from 'node:fs';
import { basename } from 'node:path';
import * as native from '@mlxcel/core-native';
import { checkDType, dtypeBytes, type DType } from './dtype.js';
import { MlxcelError } from './errors.js';
import { numel, Tensor } from './tensor.js';
import { noteFileMapping } from './weight-memory.js';

const MAX_HEADER = 100_000_000;

export interface TensorInfo {
  name: string;
  dtype: DType;
  shape: number[];
  /** Byte range inside the data buffer (after the header). */
  begin: number;
  end: number;
}

export class SafetensorsFile {
  private constructor(
    readonly path: string,
    private readonly buf: Uint8Array,
    private readonly dataStart: number,
    readonly tensors: ReadonlyMap<string, TensorInfo>,
    readonly metadata: Readonly<Record<string, string>>,
  ) {}

  /** Maps the file and validates its header. Throws MlxcelError naming the file (and tensor) at fault. */
  static open(path: string): SafetensorsFile {
    let ab: ArrayBuffer;
    try {
      ab = native.mmapFile(path);
      noteFileMapping(ab);
    } catch (e) {
      throw new MlxcelError('E_FILE', `cannot open safetensors file ${path}: ${(e as Error).message}`);
    }
    return SafetensorsFile.fromBytes(new Uint8Array(ab), path);
  }

  /** Parses an in-memory safetensors image (used by open() and tests). */
  static fromBytes(buf: Uint8Array, path = '<memory>'): SafetensorsFile {
    const file = basename(path);
    const fail = (msg: string): never => {
      throw new MlxcelError('E_SAFETENSORS', `${file}: ${msg}`);
    };
    if (buf.byteLength < 8) fail(`truncated file (${buf.byteLength} bytes; a safetensors file starts with an 8-byte header length)`);
    const n = Number(new DataView(buf.buffer, buf.byteOffset, 8).getBigUint64(0, true));
    if (n > MAX_HEADER) fail(`header length ${n} exceeds the ${MAX_HEADER}-byte limit`);
    if (8 + n > buf.byteLength) fail(`header length ${n} runs past the end of the file (${buf.byteLength} bytes)`);
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
    let header: unknown;
    try {
      header = JSON.parse(text.decode(buf.subarray(8, 8 + n)));
    } catch (e) {
      fail(`header is not valid UTF-8 JSON (${(e as Error).message})`);
    }
    if (typeof header !== 'object' || header === null || Array.isArray(header)) fail('header is not a JSON object');
    const dataStart = 8 + n;
    const dataLen = buf.byteLength - dataStart;
    const tensors = new Map<string, TensorInfo>();
    let metadata: Record<string, string> = {};
    for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
      if (name === '__metadata__') {
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('__metadata__ is not an object');
        for (const [k, v] of Object.entries(raw as Record<string, unknown>))
          if (typeof v !== 'string') fail(`__metadata__.${k} is not a string`);
        metadata = raw as Record<string, string>;
        continue;
      }
      const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      if (typeof e !== 'object' || e === null) fail(`tensor ${name}: entry is not an object`);
      const dtype = checkDType(e.dtype, `${file}: tensor ${name}`);
      if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isSafeInteger(d) && d >= 0))
        fail(`tensor ${name}: shape ${JSON.stringify(e.shape)} is not a list of non-negative integers`);
      const off = e.data_offsets;
      if (!Array.isArray(off) || off.length !== 2 || !off.every((d) => Number.isSafeInteger(d) && d >= 0))
        fail(`tensor ${name}: data_offsets ${JSON.stringify(off)} is not [begin, end]`);
      const [begin, end] = off as [number, number];
      if (end < begin) fail(`tensor ${name}: data_offsets end ${end} < begin ${begin}`);
      if (end > dataLen) fail(`tensor ${name}: data_offsets [${begin}, ${end}] out of range (data buffer is ${dataLen} bytes)`);
      const shape = e.shape as number[];
      const want = numel(shape) * dtypeBytes(dtype);
      if (end - begin !== want)
        fail(`tensor ${name}: ${end - begin} bytes but ${dtype}[${shape.join(', ')}] needs ${want}`);
      tensors.set(name, { name, dtype, shape, begin, end });
    }
    // Entries must tile the buffer exactly: sorted by begin, each begins where the previous ended.
    const sorted = [...tensors.values()].sort((a, b) => a.begin - b.begin || a.end - b.end);
    let cursor = 0;
    for (const t of sorted) {
      if (t.begin < cursor) fail(`tensor ${t.name}: data_offsets [${t.begin}, ${t.end}] overlap the previous tensor (ends at ${cursor})`);
      if (t.begin > cursor) fail(`tensor ${t.name}: hole in the data buffer before offset ${t.begin} (previous tensor ends at ${cursor})`);
      cursor = t.end;
    }
    if (cursor !== dataLen) fail(`data buffer is ${dataLen} bytes but tensors cover ${cursor} (truncated or trailing bytes)`);
    return new SafetensorsFile(path, buf, dataStart, tensors, metadata);
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** Zero-copy tensor view into the mapping. */
  get(name: string): Tensor {
    const info = this.tensors.get(name);
    if (!info) throw new MlxcelError('E_MISSING_TENSOR', `${basename(this.path)}: no tensor named ${name}`);
    return new Tensor(info.dtype, info.shape, this.buf.subarray(this.dataStart + info.begin, this.dataStart + info.end));
  }
}

/**
 * Writes tensors to a safetensors file (header padded with spaces to a multiple of 8, tensors in the
 * given order, data contiguous). Writes to `path.tmp` then renames, so a crash never leaves a torn file.
 */
export function writeSafetensors(path: string, tensors: Record<string, Tensor>, metadata?: Record<string, string>): void {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length) header.__metadata__ = metadata;
  let off = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: [off, off + t.bytes.byteLength] };
    off += t.bytes.byteLength;
  }
  let json = JSON.stringify(header);
  const enc = new TextEncoder();
  let hb = enc.encode(json);
  const pad = (8 - ((8 + hb.byteLength) % 8)) % 8;
  if (pad) {
    json += ' '.repeat(pad);
    hb = enc.encode(json);
  }
  const lenBuf = new Uint8Array(8);
  new DataView(lenBuf.buffer).setBigUint64(0, BigInt(hb.byteLength), true);
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, lenBuf);
    writeSync(fd, hb);
    for (const t of Object.values(tensors)) {
      let done = 0;
      while (done < t.bytes.byteLength) done += writeSync(fd, t.bytes, done, t.bytes.byteLength - done);
    }
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
