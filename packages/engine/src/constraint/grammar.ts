/**
 * The grammar every constraint compiles to: context-free rules over bytes and Unicode code points.
 * JSON Schema, `json_object` and GBNF all produce a `GrammarBuilder`'s rules; `build()` checks them
 * (undefined rules, left recursion, rules that match nothing) and flattens them into the integer
 * tables the matcher walks.
 *
 * Elements of an alternative:
 * - `byte b`: one byte (string literals are stored as their UTF-8 bytes);
 * - `class`: one code point in (or, negated, outside) a set of inclusive ranges, matched over its
 *   UTF-8 bytes;
 * - `ref r`: the rule r;
 * - `token id`: one special token by id (`<|tool_call>`), which has no byte text of its own.
 * Repetition (`*`, `+`, `?`, `{m,n}`) is expanded into helper rules by the builder.
 */
import { MlxcelError } from '../errors.js';

export type Element =
  | { t: 'byte'; b: number }
  | { t: 'class'; ranges: number[]; neg: boolean }
  | { t: 'ref'; rule: number }
  | { t: 'token'; id: number };

export type Sequence = Element[];

/** Element kinds in the flat table. END closes an alternative. */
export const END = 0, BYTE = 1, CLASS = 2, REF = 3, TOKEN = 4;

export interface CharClass {
  /** Sorted, merged inclusive code-point ranges [lo0, hi0, lo1, hi1, …]. */
  ranges: Int32Array;
  neg: boolean;
  /** ASCII fast path: ascii[c] = 1 when code point c < 128 is in the class. */
  ascii: Uint8Array;
  /** Fewest UTF-8 bytes of any code point in the class (1–4), for the shortest-completion bound. */
  minBytes: number;
}

/** A checked grammar as flat tables: one position per element, alternatives end with END. */
export interface Grammar {
  /** kind[pos]: END | BYTE | CLASS | REF | TOKEN. */
  readonly kind: Uint8Array;
  /** arg[pos]: the byte, the class index, the rule index or the token id. */
  readonly arg: Int32Array;
  readonly classes: readonly CharClass[];
  /** Start positions of each rule's alternatives. */
  readonly ruleAlts: readonly Int32Array[];
  readonly ruleNames: readonly string[];
  readonly root: number;
  /** Fewest bytes (special tokens count 1) from each position to the end of its alternative. */
  readonly minRest: Int32Array;
  /** Positions below this index belong to a prelude shared by grammars of the same family (mask cache sharing). */
  readonly sharedPositions: number;
  /** Family tag of the shared prelude ('' when none). */
  readonly sharedTag: string;
  /** Every special token id a TOKEN element names. */
  readonly tokenIds: ReadonlySet<number>;
}

const MAX_CP = 0x10ffff;

export function charClass(ranges: number[], neg: boolean): CharClass {
  const pairs: [number, number][] = [];
  for (let i = 0; i < ranges.length; i += 2) pairs.push([ranges[i]!, ranges[i + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  const merged: number[] = [];
  for (const [lo, hi] of pairs) {
    const n = merged.length;
    if (n && lo <= merged[n - 1]! + 1) merged[n - 1] = Math.max(merged[n - 1]!, hi);
    else merged.push(lo, hi);
  }
  const r = Int32Array.from(merged);
  const ascii = new Uint8Array(128);
  for (let c = 0; c < 128; c++) ascii[c] = inRanges(r, c) !== neg ? 1 : 0;
  let minBytes = 5;
  for (const [lo, hi, len] of [[0, 0x7f, 1], [0x80, 0x7ff, 2], [0x800, 0xffff, 3], [0x10000, MAX_CP, 4]] as const) {
    if (classHasIn({ ranges: r, neg }, lo, hi)) { minBytes = len; break; }
  }
  return { ranges: r, neg, ascii, minBytes };
}

export function inRanges(r: Int32Array, cp: number): boolean {
  // Binary search over the range pairs.
  let lo = 0, hi = (r.length >> 1) - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < r[2 * mid]!) hi = mid - 1;
    else if (cp > r[2 * mid + 1]!) lo = mid + 1;
    else return true;
  }
  return false;
}

export function classHas(c: Pick<CharClass, 'ranges' | 'neg'>, cp: number): boolean {
  return inRanges(c.ranges, cp) !== c.neg;
}

/** Whether some code point in [lo, hi] is in the class (prunes impossible UTF-8 lead bytes). */
export function classHasIn(c: Pick<CharClass, 'ranges' | 'neg'>, lo: number, hi: number): boolean {
  const r = c.ranges;
  if (!c.neg) {
    for (let i = 0; i < r.length; i += 2) if (r[i]! <= hi && r[i + 1]! >= lo) return true;
    return false;
  }
  // Negated: is [lo, hi] not fully covered by one range?
  for (let i = 0; i < r.length; i += 2) if (r[i]! <= lo && r[i + 1]! >= hi) return false;
  return true;
}

/**
 * Builds rules by name. Sources call `define` / `rule` and the sequence helpers; `build(root)`
 * validates and flattens.
 */
export class GrammarBuilder {
  private readonly names: string[] = [];
  private readonly ids = new Map<string, number>();
  private readonly alts: (Sequence[] | undefined)[] = [];
  /** Where each rule was referenced first (for "undefined rule" errors). */
  private readonly firstUse = new Map<number, string>();
  private helperCount = 0;

  constructor(readonly sourceName: string, readonly sharedTag = '') {}

  /** The id of rule `name` (created on first use; defined later with `define`). */
  rule(name: string, usedAt?: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.ids.set(name, id);
      this.alts.push(undefined);
    }
    if (usedAt !== undefined && !this.firstUse.has(id)) this.firstUse.set(id, usedAt);
    return id;
  }

  has(name: string): boolean {
    const id = this.ids.get(name);
    return id !== undefined && this.alts[id] !== undefined;
  }

  define(name: string, alternatives: Sequence[]): number {
    const id = this.rule(name);
    if (this.alts[id] !== undefined) throw new MlxcelError('GRAMMAR_INVALID', `${this.sourceName}: rule "${name}" is defined twice`);
    this.alts[id] = alternatives;
    return id;
  }

  /** Defines a rule created earlier with `rule()` (by id). */
  defineRule(id: number, alternatives: Sequence[]): void {
    this.define(this.names[id]!, alternatives);
  }

  /** A fresh rule id to define later with `defineRule` (for rules that refer to themselves). */
  fresh(base: string): number {
    return this.rule(`${base}-${++this.helperCount}`);
  }

  /** A fresh helper rule with the given alternatives. */
  helper(base: string, alternatives: Sequence[]): number {
    const name = `${base}-${++this.helperCount}`;
    return this.define(name, alternatives);
  }

  ruleCount(): number {
    return this.names.length;
  }

  // ---- sequence helpers ----
  static lit(s: string): Element[] {
    return Array.from(Buffer.from(s, 'utf8'), (b) => ({ t: 'byte' as const, b }));
  }

  static ref(rule: number): Element {
    return { t: 'ref', rule };
  }

  static cls(ranges: number[], neg = false): Element {
    return { t: 'class', ranges, neg };
  }

  /** x* (right-recursive helper: x-star ::= x x-star | ε). */
  star(seq: Sequence, base = 'star'): Element {
    const id = this.rule(`${base}-${++this.helperCount}`);
    this.alts[id] = [[...seq, { t: 'ref', rule: id }], []];
    return { t: 'ref', rule: id };
  }

  plus(seq: Sequence, base = 'plus'): Element[] {
    return [...seq, this.star(seq, base)];
  }

  opt(seq: Sequence, base = 'opt'): Element {
    return { t: 'ref', rule: this.helper(base, [seq, []]) };
  }

  /** x{min,max} (max = Infinity for unbounded), expanded into nested optional helpers. */
  repeat(seq: Sequence, min: number, max: number, base = 'rep'): Element[] {
    const out: Element[] = [];
    for (let i = 0; i < min; i++) out.push(...seq);
    if (max === Infinity) out.push(this.star(seq, base));
    else if (max > min) {
      // opt_k ::= x opt_{k-1} | ε  — nesting keeps the grammar linear in (max - min).
      let tail: Element | null = null;
      for (let i = 0; i < max - min; i++) {
        const alt: Sequence = tail ? [...seq, tail] : [...seq];
        tail = { t: 'ref', rule: this.helper(base, [alt, []]) };
      }
      out.push(tail!);
    }
    return out;
  }

  /** Validates and flattens. `sharedRules`: rules [0, n) form a prelude identical across grammars tagged `sharedTag`. */
  build(rootName: string, sharedRules = 0): Grammar {
    const root = this.ids.get(rootName);
    if (root === undefined || this.alts[root] === undefined)
      throw new MlxcelError('GRAMMAR_INVALID', `${this.sourceName}: no "${rootName}" rule`);
    for (let r = 0; r < this.names.length; r++) {
      if (this.alts[r] === undefined)
        throw new MlxcelError('GRAMMAR_INVALID', `${this.sourceName}: rule "${this.names[r]}" is used${this.firstUse.has(r) ? ` at ${this.firstUse.get(r)}` : ''} but never defined`);
    }
    const alts = this.alts as Sequence[][];
    // Flatten.
    const kind: number[] = [], arg: number[] = [];
    const classes: CharClass[] = [];
    const ruleAlts: Int32Array[] = [];
    const tokenIds = new Set<number>();
    let sharedPositions = 0;
    for (let r = 0; r < alts.length; r++) {
      const starts: number[] = [];
      for (const seq of alts[r]!) {
        starts.push(kind.length);
        for (const e of seq) {
          if (e.t === 'byte') { kind.push(BYTE); arg.push(e.b); }
          else if (e.t === 'class') { kind.push(CLASS); arg.push(classes.length); classes.push(charClass(e.ranges, e.neg)); }
          else if (e.t === 'ref') { kind.push(REF); arg.push(e.rule); }
          else { kind.push(TOKEN); arg.push(e.id); tokenIds.add(e.id); }
        }
        kind.push(END); arg.push(0);
      }
      ruleAlts.push(Int32Array.from(starts));
      if (r === sharedRules - 1) sharedPositions = kind.length;
    }
    const g = {
      kind: Uint8Array.from(kind), arg: Int32Array.from(arg), classes, ruleAlts, ruleNames: [...this.names], root,
      minRest: new Int32Array(kind.length), sharedPositions, sharedTag: sharedRules > 0 ? this.sharedTag : '', tokenIds,
    };
    const minLen = ruleMinLengths(g);
    for (let r = 0; r < alts.length; r++) {
      if (minLen[r] === Infinity)
        throw new MlxcelError('GRAMMAR_INVALID', `${this.sourceName}: rule "${this.names[r]}" can never finish matching (every alternative recurses into itself)`);
    }
    fillMinRest(g, minLen);
    checkLeftRecursion(g, minLen, this.sourceName);
    return g;
  }
}

/** Fewest bytes each rule can match (Infinity: it matches nothing finite). Fixpoint over the rules. */
function ruleMinLengths(g: Omit<Grammar, 'minRest'> & { minRest: Int32Array }): number[] {
  const n = g.ruleAlts.length;
  const min = new Array<number>(n).fill(Infinity);
  let changed = true;
  while (changed) {
    changed = false;
    for (let r = 0; r < n; r++) {
      for (const start of g.ruleAlts[r]!) {
        let sum = 0;
        for (let p = start; g.kind[p] !== END; p++) sum += elemMin(g, p, min);
        if (sum < min[r]!) { min[r] = sum; changed = true; }
      }
    }
  }
  return min;
}

function elemMin(g: Pick<Grammar, 'kind' | 'arg' | 'classes'>, p: number, min: number[]): number {
  const k = g.kind[p]!;
  if (k === BYTE || k === TOKEN) return 1;
  if (k === CLASS) return g.classes[g.arg[p]!]!.minBytes;
  return min[g.arg[p]!]!;
}

function fillMinRest(g: Grammar & { minRest: Int32Array }, min: number[]): void {
  for (const starts of g.ruleAlts) {
    for (const start of starts) {
      let end = start;
      while (g.kind[end] !== END) end++;
      let acc = 0;
      g.minRest[end] = 0;
      for (let p = end - 1; p >= start; p--) {
        acc += elemMin(g, p, min);
        g.minRest[p] = Math.min(acc, 0x3fffffff);
      }
    }
  }
}

/** A rule that can reach itself without consuming input would make the matcher loop: refuse it, naming the cycle. */
function checkLeftRecursion(g: Grammar, min: number[], source: string): void {
  const n = g.ruleAlts.length;
  // first[r] = rules r can start with (through nullable prefixes).
  const first: number[][] = [];
  for (let r = 0; r < n; r++) {
    const s = new Set<number>();
    for (const start of g.ruleAlts[r]!) {
      for (let p = start; g.kind[p] !== END; p++) {
        if (g.kind[p] !== REF) break;
        const t = g.arg[p]!;
        s.add(t);
        if (min[t] !== 0) break;
      }
    }
    first.push([...s]);
  }
  const state = new Uint8Array(n); // 0 new, 1 on stack, 2 done
  const path: number[] = [];
  const visit = (r: number): void => {
    state[r] = 1;
    path.push(r);
    for (const t of first[r]!) {
      if (state[t] === 1) {
        const cycle = path.slice(path.indexOf(t)).map((i) => g.ruleNames[i]);
        throw new MlxcelError('GRAMMAR_LEFT_RECURSION', `${source}: left recursion is not supported: ${[...cycle, g.ruleNames[t]].join(' -> ')} (rewrite it with repetition, e.g. a ::= b ("+" b)*)`);
      }
      if (state[t] === 0) visit(t);
    }
    path.pop();
    state[r] = 2;
  };
  for (let r = 0; r < n; r++) if (state[r] === 0) visit(r);
}
