/**
 * Attention over caches: one native call for a whole batch of sequences (each with its own cache,
 * length, positions, mask and spans). The kernel reads every storage kind in place.
 */
import * as native from '@mlxcel/core-native';
import type { AttentionSeqDesc } from '@mlxcel/core-native';
import { MlxcelError, outputFloats } from '@mlxcel/tensor';
import type { AttendOptions, BlockSparse, LayerCache } from './types.js';

/** One sequence of a batched attention call. */
export interface AttendItem {
  cache: LayerCache;
  /** Query rows of this sequence (consecutive in the batch's q, in item order). */
  rows: number;
  /** Absolute position of each of its rows. */
  qPos: Int32Array;
  /** [maskHeads, rows, slots] over `cache.slotPositions()`, nonzero = visible. */
  mask?: Uint8Array;
  maskHeads?: number;
  /** Bidirectional [start, end) position pairs of this sequence. */
  spans?: Int32Array;
}

export type BatchAttendOptions = Omit<AttendOptions, 'mask' | 'maskHeads' | 'spans'>;

function fail(code: string, msg: string): never {
  throw new MlxcelError(code, msg);
}

function checkBlockSparse(b: BlockSparse): void {
  for (const k of ['blockSize', 'localBlocks', 'vertStride'] as const)
    if (!Number.isInteger(b[k]) || b[k] < 1) fail('E_ATTENTION', `attend: blockSparse.${k} must be a positive integer, got ${b[k]}`);
  if (b.headStep !== undefined && (!Number.isInteger(b.headStep) || b.headStep < 0))
    fail('E_ATTENTION', `attend: blockSparse.headStep must be a non-negative integer, got ${b.headStep}`);
}

/**
 * q [Σ rows, nHeads, headDim] → out [Σ rows, nHeads, vDim], rows in item order. All caches must share
 * nKvHeads / headDim / vDim (one layer of several sequences).
 */
export function attendBatch(q: Float32Array, items: readonly AttendItem[], nHeads: number, opts: BatchAttendOptions): Float32Array {
  if (items.length === 0) return new Float32Array(0);
  const c0 = items[0]!.cache;
  const { nKvHeads, headDim, vDim } = c0;
  if (!Number.isInteger(nHeads) || nHeads < 1 || nHeads % nKvHeads !== 0)
    fail('E_SHAPE', `attend: nHeads ${nHeads} is not a positive multiple of the cache's nKvHeads ${nKvHeads}`);
  if (!(typeof opts.scale === 'number' && Number.isFinite(opts.scale))) fail('E_ATTENTION', `attend: scale must be a finite number, got ${opts.scale}`);
  if (opts.blockSparse) checkBlockSparse(opts.blockSparse);
  let rows = 0;
  const seqs: AttentionSeqDesc[] = [];
  items.forEach((it, i) => {
    const c = it.cache;
    if (c.nKvHeads !== nKvHeads || c.headDim !== headDim || c.vDim !== vDim)
      fail('E_SHAPE', `attend: item ${i}'s cache is [${c.nKvHeads} heads, ${c.headDim}/${c.vDim}] but item 0's is [${nKvHeads} heads, ${headDim}/${vDim}]`);
    if (!Number.isInteger(it.rows) || it.rows < 0) fail('E_SHAPE', `attend: item ${i}: rows must be a non-negative integer, got ${it.rows}`);
    if (!(it.qPos instanceof Int32Array) || it.qPos.length < it.rows)
      fail('E_SHAPE', `attend: item ${i}: qPos must be an Int32Array of ${it.rows} positions`);
    const segments = c.segments();
    const slots = segments.reduce((s, g) => s + g.n, 0);
    const seq: AttentionSeqDesc = { qStart: rows, nQ: it.rows, segments };
    if (it.mask) {
      const mh = it.maskHeads ?? 1;
      if (mh !== 1 && mh !== nHeads) fail('E_SHAPE', `attend: item ${i}: maskHeads must be 1 or nHeads (${nHeads}), got ${mh}`);
      if (it.mask.length < mh * it.rows * slots)
        fail('E_SHAPE', `attend: item ${i}: mask has ${it.mask.length} entries, needs [${mh}, ${it.rows}, ${slots} slots]`);
      seq.mask = it.mask;
      seq.maskHeads = mh;
    }
    if (it.spans) {
      if (!(it.spans instanceof Int32Array) || it.spans.length % 2)
        fail('E_ATTENTION', `attend: item ${i}: spans must be an Int32Array of [start, end) pairs`);
      seq.spans = it.spans;
    }
    seqs.push(seq);
    rows += it.rows;
  });
  if (q.length < rows * nHeads * headDim)
    fail('E_SHAPE', `attend: q has ${q.length} floats, needs [${rows} rows, ${nHeads} heads, ${headDim}]`);
  const qPos = new Int32Array(rows);
  let r = 0;
  for (const it of items) {
    qPos.set(it.qPos.subarray(0, it.rows), r);
    r += it.rows;
  }
  const out = outputFloats(rows * nHeads * vDim); // every element written (a query seeing nothing gets zeros)
  try {
    native.attention({
      q, qPos, out, nHeads, headDim, vDim, nKvHeads,
      scale: opts.scale, softcap: opts.softcap ?? 0, causal: opts.causal ?? true, window: opts.window ?? 0,
      ...(opts.blockSparse ? { blockSparse: opts.blockSparse } : {}),
      seqs,
    });
  } catch (e) {
    throw new MlxcelError('E_ATTENTION', (e as Error).message, { cause: e });
  }
  return out;
}

/** Attention of one sequence over one cache (LayerCache.attend). */
export function attendOne(cache: LayerCache, q: Float32Array, Tq: number, nHeads: number, qPos: Int32Array, opts: AttendOptions): Float32Array {
  const { mask, maskHeads, spans, ...rest } = opts;
  return attendBatch(q, [{ cache, rows: Tq, qPos, ...(mask ? { mask, maskHeads: maskHeads ?? 1 } : {}), ...(spans ? { spans } : {}) }], nHeads, rest);
}
