import { rope as nativeRope } from '@mlxcel/core-native';
import { ropeFrequencies, resolveRegime } from './frequencies.js';
import type { RopeRegime, RopeSpec } from './types.js';

export interface RopeTableOptions {
  /** Rows (positions) computed up front; default 256. */
  initialRows?: number;
  /** Upper bound on rows, to fail clearly instead of exhausting memory; default 2^22. */
  maxRows?: number;
}

/**
 * Cached cos/sin tables of one spec under one regime, `Float32Array [rows, tableDim/2]` indexed by position,
 * with the attention factor folded in. Rows grow on demand (at least doubling). Each row is a pure function
 * of its position (angle p · ω_i and cos/sin in float64, then × scale, rounded once to float32), so a row never
 * depends on how far the table has grown.
 */
export class RopeTable {
  readonly spec: RopeSpec;
  readonly regime: RopeRegime;
  /** Attention factor folded into the tables. */
  readonly scale: number;
  /** Inverse frequency per pair (float64). */
  readonly invFreq: Float64Array;
  /** Pairs per row (tableDim / 2); also the kernel's rotDim / 2. */
  readonly pairs: number;
  private readonly maxRows: number;
  private cosTab: Float32Array;
  private sinTab: Float32Array;
  private nRows = 0;

  constructor(spec: RopeSpec, regime?: RopeRegime | number, options: RopeTableOptions = {}) {
    this.spec = spec;
    this.regime = resolveRegime(spec, regime, 'RopeTable');
    const f = ropeFrequencies(spec, this.regime);
    this.invFreq = f.invFreq;
    this.scale = f.attentionScale;
    this.pairs = spec.tableDim / 2;
    this.maxRows = options.maxRows ?? 1 << 22;
    if (!Number.isInteger(this.maxRows) || this.maxRows < 1) throw new RangeError(`RopeTable: maxRows must be a positive integer, got ${this.maxRows}`);
    const initial = options.initialRows ?? 256;
    if (!Number.isInteger(initial) || initial < 0) throw new RangeError(`RopeTable: initialRows must be a non-negative integer, got ${initial}`);
    this.cosTab = new Float32Array(0);
    this.sinTab = new Float32Array(0);
    this.ensure(Math.min(initial, this.maxRows));
  }

  /** Number of positions the tables currently cover (0 … rows − 1). */
  get rows(): number {
    return this.nRows;
  }

  /** cos table `[rows, pairs]` (a view; replaced when the table grows). */
  get cos(): Float32Array {
    return this.cosTab;
  }

  /** sin table `[rows, pairs]` (a view; replaced when the table grows). */
  get sin(): Float32Array {
    return this.sinTab;
  }

  /** Make sure positions 0 … rows − 1 are covered, growing to max(rows, 2 × current). */
  ensure(rows: number): void {
    if (!Number.isInteger(rows) || rows < 0) throw new RangeError(`RopeTable.ensure: rows must be a non-negative integer, got ${rows}`);
    if (rows <= this.nRows) return;
    if (rows > this.maxRows) {
      throw new RangeError(`RopeTable: position ${rows - 1} exceeds the table limit of ${this.maxRows} rows (raise options.maxRows)`);
    }
    const target = Math.min(this.maxRows, Math.max(rows, 2 * this.nRows));
    const P = this.pairs;
    const cos = new Float32Array(target * P);
    const sin = new Float32Array(target * P);
    cos.set(this.cosTab);
    sin.set(this.sinTab);
    const inv = this.invFreq;
    const a = this.scale;
    for (let p = this.nRows; p < target; p++) {
      const o = p * P;
      for (let i = 0; i < P; i++) {
        const angle = p * inv[i]!;
        cos[o + i] = Math.cos(angle) * a;
        sin[o + i] = Math.sin(angle) * a;
      }
    }
    this.cosTab = cos;
    this.sinTab = sin;
    this.nRows = target;
  }

  /**
   * Rotate `x` `[nTok, nHeads, headDim]` in place, token t at `positions[t]` (any order, repeats allowed,
   * e.g. several sequences at different offsets in one batch). A number instead of `positions` means the
   * contiguous positions offset … offset + nTok − 1.
   */
  apply(x: Float32Array, nTok: number, nHeads: number, headDim: number, positions: Int32Array | number): void {
    if (headDim !== this.spec.headDim) {
      throw new RangeError(`RopeTable.apply: headDim ${headDim} differs from the spec's head dim ${this.spec.headDim}`);
    }
    if (!Number.isInteger(nTok) || nTok < 0) throw new RangeError(`RopeTable.apply: nTok must be a non-negative integer, got ${nTok}`);
    let pos: Int32Array;
    if (typeof positions === 'number') {
      if (!Number.isInteger(positions) || positions < 0) throw new RangeError(`RopeTable.apply: offset must be a non-negative integer, got ${positions}`);
      pos = new Int32Array(nTok);
      for (let t = 0; t < nTok; t++) pos[t] = positions + t;
    } else {
      pos = positions;
      if (pos.length < nTok) throw new RangeError(`RopeTable.apply: positions has ${pos.length} entries, need ${nTok}`);
    }
    let max = -1;
    for (let t = 0; t < nTok; t++) {
      const p = pos[t]!;
      if (p < 0) throw new RangeError(`RopeTable.apply: positions[${t}] = ${p} is negative`);
      if (p > max) max = p;
    }
    if (nTok === 0) return;
    this.ensure(max + 1);
    nativeRope(x, nTok, nHeads, headDim, pos, this.cosTab, this.sinTab, this.spec.tableDim, this.spec.layout === 'interleaved');
  }
}

/** The tables of one spec, one per regime id, built on first use (share it between sequences and layers of equal spec). */
export class RopeTableCache {
  readonly spec: RopeSpec;
  private readonly options: RopeTableOptions;
  private readonly tables = new Map<string, RopeTable>();

  constructor(spec: RopeSpec, options: RopeTableOptions = {}) {
    this.spec = spec;
    this.options = options;
  }

  /** The table of `regime` (a RopeRegime of this spec, or the regime of a total length). */
  get(regime?: RopeRegime | number): RopeTable {
    const r = resolveRegime(this.spec, regime, 'RopeTableCache');
    let t = this.tables.get(r.id);
    if (!t) {
      t = new RopeTable(this.spec, r, this.options);
      this.tables.set(r.id, t);
    }
    return t;
  }

  /** Drop a regime's table (e.g. past dynamic-NTK lengths no sequence uses any more). */
  delete(regime: RopeRegime): boolean {
    return this.tables.delete(regime.id);
  }

  get size(): number {
    return this.tables.size;
  }
}
