// safetensors reading: each malformed file gives an MlxcelError whose message names the file (and the
// tensor at fault when the header could be parsed); sharded checkpoints; and the writer round trip.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Checkpoint, MlxcelError, SafetensorsFile, Tensor, writeSafetensors } from '../src/index.js';
import { readRaw } from './raw.js';

const dir = mkdtempSync(join(tmpdir(), 'mlxcel-st-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Entry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

/** Builds a safetensors image by hand (independent of the library's writer). */
function image(header: Record<string, Entry | Record<string, string>>, data: Uint8Array, headerLength?: number): Uint8Array {
  let json = JSON.stringify(header);
  while ((8 + json.length) % 8) json += ' ';
  const hb = Buffer.from(json, 'utf8');
  const out = new Uint8Array(8 + hb.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength ?? hb.length), true);
  out.set(hb, 8);
  out.set(data, 8 + hb.length);
  return out;
}

// A valid file: a F32[2,3] (24 B), b BF16[4] (8 B), c U32[2,2] (16 B) = 48 bytes of data.
const good = (): Record<string, Entry | Record<string, string>> => ({
  __metadata__: { format: 'pt' },
  a: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] },
  b: { dtype: 'BF16', shape: [4], data_offsets: [24, 32] },
  c: { dtype: 'U32', shape: [2, 2], data_offsets: [32, 48] },
});
const data = Uint8Array.from({ length: 48 }, (_, i) => i);

function write(name: string, bytes: Uint8Array): string {
  const p = join(dir, name);
  writeFileSync(p, bytes);
  return p;
}

/** Opens the file and returns the MlxcelError it throws (failing if it does not). */
function openError(path: string): MlxcelError {
  try {
    SafetensorsFile.open(path);
  } catch (e) {
    expect(e).toBeInstanceOf(MlxcelError);
    return e as MlxcelError;
  }
  throw new Error(`${path} opened without error`);
}

describe('malformed safetensors files', () => {
  it('the well-formed reference file opens and reads back', () => {
    const f = SafetensorsFile.open(write('good.safetensors', image(good(), data)));
    expect([...f.tensors.keys()]).toEqual(['a', 'b', 'c']);
    expect(f.metadata).toEqual({ format: 'pt' });
    expect(Array.from(f.get('c').toI32())).toEqual([0x23222120, 0x27262524, 0x2b2a2928, 0x2f2e2d2c]);
  });

  it('truncated file: the tensor whose data is cut off is named', () => {
    const full = image(good(), data);
    const e = openError(write('truncated.safetensors', full.subarray(0, full.length - 5)));
    expect(e.code).toBe('E_SAFETENSORS');
    expect(e.message).toMatch(/^truncated\.safetensors: tensor c: data_offsets \[32, 48\] out of range \(data buffer is 43 bytes\)/);
    // Cut inside the header or the length prefix: the file is named and the length is reported.
    expect(openError(write('truncated2.safetensors', full.subarray(0, 20))).message).toMatch(/^truncated2\.safetensors: header length \d+ runs past the end of the file \(20 bytes\)/);
    expect(openError(write('truncated3.safetensors', full.subarray(0, 5))).message).toMatch(/^truncated3\.safetensors: truncated file \(5 bytes/);
  });

  it('header length past EOF', () => {
    const e = openError(write('hdrlen.safetensors', image(good(), data, 1_000_000)));
    expect(e.message).toMatch(/^hdrlen\.safetensors: header length 1000000 runs past the end of the file/);
    const huge = openError(write('hdrhuge.safetensors', image(good(), data, 2 ** 40)));
    expect(huge.message).toMatch(/^hdrhuge\.safetensors: header length 1099511627776 exceeds the 100000000-byte limit/);
  });

  it('overlapping offsets: the second tensor of the overlap is named', () => {
    const h = good();
    h.b = { dtype: 'BF16', shape: [4], data_offsets: [20, 28] };
    h.c = { dtype: 'U32', shape: [5], data_offsets: [28, 48] };
    const e = openError(write('overlap.safetensors', image(h, data)));
    expect(e.message).toMatch(/^overlap\.safetensors: tensor b: data_offsets \[20, 28\] overlap the previous tensor \(ends at 24\)/);
  });

  it('out-of-range offsets', () => {
    const h = good();
    h.c = { dtype: 'U32', shape: [2, 2], data_offsets: [48, 64] };
    const e = openError(write('range.safetensors', image(h, data)));
    expect(e.message).toMatch(/^range\.safetensors: tensor c: data_offsets \[48, 64\] out of range \(data buffer is 48 bytes\)/);
    const h2 = good();
    h2.a = { dtype: 'F32', shape: [2, 3], data_offsets: [24, 0] };
    expect(openError(write('range2.safetensors', image(h2, data))).message).toMatch(/^range2\.safetensors: tensor a: data_offsets end 0 < begin 24/);
  });

  it('a hole between tensors and trailing bytes are rejected too', () => {
    const h = good();
    delete h.b;
    h.c = { dtype: 'U32', shape: [2, 2], data_offsets: [32, 48] };
    expect(openError(write('hole.safetensors', image(h, data))).message).toMatch(/^hole\.safetensors: tensor c: hole in the data buffer before offset 32/);
    const extra = new Uint8Array(52);
    extra.set(data);
    expect(openError(write('trailing.safetensors', image(good(), extra))).message).toMatch(/^trailing\.safetensors: data buffer is 52 bytes but tensors cover 48/);
  });

  it('unknown dtype (and a valid but unsupported one)', () => {
    const h = good();
    h.b = { dtype: 'F9', shape: [4], data_offsets: [24, 32] };
    const e = openError(write('dtype.safetensors', image(h, data)));
    expect(e.code).toBe('E_DTYPE');
    expect(e.message).toMatch(/^dtype\.safetensors: tensor b: unknown dtype "F9"/);
    h.b = { dtype: 'F8_E4M3', shape: [8], data_offsets: [24, 32] };
    expect(openError(write('fp8.safetensors', image(h, data))).message).toMatch(/^fp8\.safetensors: tensor b: dtype F8_E4M3 is valid safetensors but not supported/);
  });

  it('shape / size mismatch', () => {
    const h = good();
    h.a = { dtype: 'F32', shape: [2, 4], data_offsets: [0, 24] };
    const e = openError(write('size.safetensors', image(h, data)));
    expect(e.message).toMatch(/^size\.safetensors: tensor a: 24 bytes but F32\[2, 4\] needs 32/);
    h.a = { dtype: 'F32', shape: [2, -3], data_offsets: [0, 24] };
    expect(openError(write('shape.safetensors', image(h, data))).message).toMatch(/^shape\.safetensors: tensor a: shape \[2,-3\] is not a list of non-negative integers/);
  });

  it('a header that is not JSON, not an object, or has non-string metadata', () => {
    const bad = new Uint8Array(16);
    new DataView(bad.buffer).setBigUint64(0, 8n, true);
    bad.set(Buffer.from('{"a": [1'), 8);
    expect(openError(write('json.safetensors', bad)).message).toMatch(/^json\.safetensors: header is not valid UTF-8 JSON/);
    const arr = image({} as never, new Uint8Array(0));
    arr.set(Buffer.from('[]'), 8);
    expect(openError(write('array.safetensors', arr)).message).toMatch(/^array\.safetensors: header is not a JSON object/);
    const h = good();
    h.__metadata__ = { format: 3 } as unknown as Record<string, string>;
    expect(openError(write('meta.safetensors', image(h, data))).message).toMatch(/^meta\.safetensors: __metadata__\.format is not a string/);
  });

  it('a file that does not exist names its path', () => {
    expect(() => SafetensorsFile.open(join(dir, 'nope.safetensors'))).toThrow(/cannot open safetensors file .*nope\.safetensors/);
  });
});

describe('sharded checkpoints', () => {
  function shardDir(name: string, weightMap: Record<string, string>, shards: Record<string, Record<string, Tensor>>): string {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'config.json'), '{}');
    writeFileSync(join(d, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
    for (const [f, ts] of Object.entries(shards)) writeSafetensors(join(d, f), ts);
    return d;
  }
  const t = (v: number) => Tensor.fromF32(Float32Array.from([v, v + 1]), [2]);

  it('the index maps every tensor to its shard', () => {
    const d = shardDir('ok', { x: 'model-00001-of-00002.safetensors', y: 'model-00002-of-00002.safetensors' }, {
      'model-00001-of-00002.safetensors': { x: t(1) },
      'model-00002-of-00002.safetensors': { y: t(5) },
    });
    const c = Checkpoint.open(d);
    expect(c.keys().sort()).toEqual(['x', 'y']);
    expect(Array.from(c.get('y').toF32())).toEqual([5, 6]);
    expect(() => c.get('z')).toThrow(/missing tensor z/);
  });

  it('missing shard: names the shard file and a tensor it should hold', () => {
    const d = shardDir('missing', { x: 'model-00001-of-00002.safetensors', 'layers.3.w': 'model-00002-of-00002.safetensors' }, {
      'model-00001-of-00002.safetensors': { x: t(1) },
    });
    let err: unknown;
    try {
      Checkpoint.open(d);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MlxcelError);
    expect((err as MlxcelError).code).toBe('E_MISSING_SHARD');
    expect((err as MlxcelError).message).toMatch(/shard model-00002-of-00002\.safetensors listed in model\.safetensors\.index\.json is missing \(it holds 1 tensor\(s\), e\.g\. layers\.3\.w\)/);
  });

  it('a tensor listed in the index but in no shard, and a tensor in two shards, are errors', () => {
    const d1 = shardDir('unlisted', { x: 'model-00001-of-00001.safetensors', ghost: 'model-00001-of-00001.safetensors' }, {
      'model-00001-of-00001.safetensors': { x: t(1) },
    });
    expect(() => Checkpoint.open(d1)).toThrow(/tensor ghost listed in the index \(in model-00001-of-00001\.safetensors\) is in no shard/);
    const d2 = shardDir('twice', { x: 'model-00001-of-00002.safetensors' }, {
      'model-00001-of-00002.safetensors': { x: t(1) },
      'model-00002-of-00002.safetensors': { x: t(2) },
    });
    writeFileSync(join(d2, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { x: 'model-00001-of-00002.safetensors', y: 'model-00002-of-00002.safetensors' } }));
    expect(() => Checkpoint.open(d2)).toThrow(/tensor x appears in both .*model-00001-of-00002\.safetensors and .*model-00002-of-00002\.safetensors/);
  });

  it('a malformed shard is reported with the shard file name', () => {
    const d = shardDir('badshard', { x: 'model-00001-of-00001.safetensors' }, { 'model-00001-of-00001.safetensors': { x: t(1) } });
    const p = join(d, 'model-00001-of-00001.safetensors');
    writeFileSync(p, readFileSync(p).subarray(0, -4));
    expect(() => Checkpoint.open(d)).toThrow(/model-00001-of-00001\.safetensors: tensor x: data_offsets \[0, 8\] out of range/);
  });

  it('without an index every model*.safetensors file is opened (and nothing else)', () => {
    const d = join(dir, 'glob');
    mkdirSync(d);
    writeSafetensors(join(d, 'model-00001-of-00002.safetensors'), { x: t(1) });
    writeSafetensors(join(d, 'model-00002-of-00002.safetensors'), { y: t(2) });
    writeSafetensors(join(d, 'consolidated.safetensors'), { z: t(3) });
    expect(Checkpoint.open(d).keys().sort()).toEqual(['x', 'y']);
    expect(() => Checkpoint.open(join(dir, 'nowhere'))).toThrow(/checkpoint folder .*nowhere does not exist/);
  });
});

describe('writeSafetensors', () => {
  it('round trip: every dtype, scalars, empty tensors, metadata, 8-byte aligned data start', () => {
    const u8 = (n: number, k: number) => Uint8Array.from({ length: n }, (_, i) => (i * k + 3) & 255);
    const tensors: Record<string, Tensor> = {
      f32: Tensor.fromF32(Float32Array.from([1.5, -2, 3e-9]), [3]),
      bf16: new Tensor('BF16', [2, 2], u8(8, 5)),
      f16: new Tensor('F16', [3], u8(6, 7)),
      i32: Tensor.fromI32(Int32Array.from([-1, 2 ** 31 - 1])),
      u32: new Tensor('U32', [1, 2], u8(8, 9)),
      i64: new Tensor('I64', [1], u8(8, 11)),
      u8: new Tensor('U8', [5], u8(5, 13)),
      bool: new Tensor('BOOL', [2], Uint8Array.from([0, 1])),
      scalar: Tensor.fromF32(Float32Array.from([42]), []),
      empty: new Tensor('F32', [0, 4], new Uint8Array(0)),
    };
    const p = join(dir, 'roundtrip.safetensors');
    writeSafetensors(p, tensors, { format: 'mlx', note: 'ünïcode' });
    const f = SafetensorsFile.open(p);
    expect(f.metadata).toEqual({ format: 'mlx', note: 'ünïcode' });
    const raw = readRaw(p);
    expect((8 + raw.headerLength) % 8).toBe(0);
    expect(raw.metadata).toEqual({ format: 'mlx', note: 'ünïcode' });
    for (const [k, t] of Object.entries(tensors)) {
      const got = f.get(k);
      expect(got.dtype).toBe(t.dtype);
      expect([...got.shape]).toEqual([...t.shape]);
      expect(Buffer.from(got.bytes).equals(Buffer.from(t.bytes)), k).toBe(true);
      expect(Buffer.from(raw.tensors.get(k)!.bytes).equals(Buffer.from(t.bytes)), k).toBe(true);
    }
    expect(Array.from(f.get('f32').toF32())).toEqual([1.5, -2, Math.fround(3e-9)]);
    expect(Array.from(f.get('i32').toI32())).toEqual([-1, 2 ** 31 - 1]);
    // Rewriting over an existing file replaces it (no stale .tmp left behind).
    writeSafetensors(p, { only: tensors.u8! });
    expect([...SafetensorsFile.open(p).tensors.keys()]).toEqual(['only']);
  });
});
