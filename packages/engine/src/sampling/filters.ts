/**
 * The filters of docs/architecture/formats.md (e) step 4, on log-probabilities ℓ (untempered, normalised).
 *
 * Instead of writing −∞ into a vocab-sized array, the surviving tokens are tracked as a
 * candidate list: `all` (every finite entry of ℓ survives) or `idx[0..n)`. Filters only
 * ever shrink the set, so the result is the same as mlx-lm's −∞ masking, but a 262k
 * vocabulary is scanned a few times instead of sorted.
 */
export interface Candidates {
  /** Capacity ≥ vocab. Holds the surviving ids when `all` is false. */
  idx: Int32Array;
  /** Scratch parallel to `idx` (probabilities during top-p). */
  p: Float64Array;
  n: number;
  /** true: every id with a finite ℓ survives (`idx`/`n` unused). */
  all: boolean;
}

export function newCandidates(capacity: number): Candidates {
  return { idx: new Int32Array(capacity), p: new Float64Array(capacity), n: 0, all: true };
}

export function resetCandidates(c: Candidates): void {
  c.all = true;
  c.n = 0;
}

/** Turn `all` into an explicit list of the finite entries (in id order). */
export function materialize(lp: Float32Array, c: Candidates): void {
  if (!c.all) return;
  const idx = c.idx;
  let n = 0;
  for (let i = 0; i < lp.length; i++) if (lp[i]! > -Infinity) idx[n++] = i;
  c.n = n;
  c.all = false;
}

/**
 * 4a. top-p: keep the smallest set of most probable tokens whose mass reaches `topP`.
 * mlx-lm keeps t iff its ascending cumulative probability is > 1 − top_p; with the
 * probabilities summing to 1 that is "the mass of the tokens ranked above t is < top_p"
 * (ranking by probability, ties: lower id first).
 *
 * No sort: (1) tokens with p ≥ τ are collected, starting at τ = 1e-3 and lowering τ until
 * the collected mass reaches top_p (the kept tokens are then all among them, since they
 * are exactly the most probable ones); (2) a quickselect on probability mass finds the
 * cut in expected linear time.
 */
export function applyTopP(lp: Float32Array, c: Candidates, topP: number): void {
  const idx = c.idx;
  const p = c.p;
  if (c.all) {
    let logTau = Math.log(1e-3);
    for (;;) {
      let n = 0;
      let mass = 0;
      for (let i = 0; i < lp.length; i++) {
        const v = lp[i]!;
        if (v >= logTau && v > -Infinity) {
          const pv = Math.exp(v);
          idx[n] = i;
          p[n++] = pv;
          mass += pv;
        }
      }
      c.n = n;
      if (mass >= topP || logTau === -Infinity) break;
      logTau = logTau < Math.log(1e-30) ? -Infinity : logTau - Math.log(1024);
    }
    c.all = false;
  } else {
    for (let j = 0; j < c.n; j++) p[j] = Math.exp(lp[idx[j]!]!);
  }
  c.n = topPCut(lp, idx, p, c.n, topP);
}

/**
 * Rearrange `idx[0..n)` (with `p` in tandem) so that the tokens kept by top-p come first,
 * and return how many are kept. Three-way quickselect on ℓ, descending; the mass of the
 * tokens known to rank above the current range is carried in `above` (invariant:
 * above < topP, so the first token of the range is always kept).
 */
function topPCut(lp: Float32Array, idx: Int32Array, p: Float64Array, n: number, topP: number): number {
  const swap = (a: number, b: number): void => {
    const t = idx[a]!;
    idx[a] = idx[b]!;
    idx[b] = t;
    const q = p[a]!;
    p[a] = p[b]!;
    p[b] = q;
  };
  let lo = 0;
  let hi = n;
  let above = 0;
  while (lo < hi) {
    const a = lp[idx[lo]!]!;
    const b = lp[idx[(lo + hi) >> 1]!]!;
    const c = lp[idx[hi - 1]!]!;
    const pivot = a < b ? (b < c ? b : a < c ? c : a) : a < c ? a : b < c ? c : b; // median of three
    // [lo, lt) > pivot, [lt, i) == pivot, [gt, hi) < pivot
    let lt = lo;
    let i = lo;
    let gt = hi;
    while (i < gt) {
      const x = lp[idx[i]!]!;
      if (x > pivot) swap(lt++, i++);
      else if (x < pivot) swap(i, --gt);
      else i++;
    }
    let massGreater = 0;
    for (let j = lo; j < lt; j++) massGreater += p[j]!;
    if (above + massGreater >= topP) {
      hi = lt; // the cut is inside the "greater" part
      continue;
    }
    above += massGreater;
    // ties: lower ids rank first (their p are all equal, so p needs no reordering)
    idx.subarray(lt, gt).sort();
    let j = lt;
    while (j < gt && above < topP) above += p[j++]!;
    if (j < gt || above >= topP) return j;
    lo = gt;
  }
  return lo;
}

/**
 * 4b. min-p: remove t if ℓ_t < max ℓ + ln(minP) (p_t < minP·p_max), except the
 * `minTokensToKeep` most probable tokens.
 */
export function applyMinP(lp: Float32Array, c: Candidates, minP: number, maxLp: number, minTokensToKeep: number): void {
  const threshold = maxLp + Math.log(minP);
  if (c.all) {
    // Protected ids: the top `minTokensToKeep` of the whole vocabulary.
    const protectedIds = minTokensToKeep > 1 ? topKIds(lp, null, lp.length, minTokensToKeep) : null;
    const idx = c.idx;
    let n = 0;
    for (let i = 0; i < lp.length; i++) {
      const v = lp[i]!;
      if (v > -Infinity && (v >= threshold || (protectedIds !== null && protectedIds.has(i)))) idx[n++] = i;
    }
    c.n = n;
    c.all = false;
    return;
  }
  // After top-p the list is a prefix of the global ranking, so the protected tokens are the
  // top `minTokensToKeep` of the list.
  const idx = c.idx;
  const protectedIds = minTokensToKeep > 1 ? topKIds(lp, idx, c.n, minTokensToKeep) : null;
  let n = 0;
  for (let j = 0; j < c.n; j++) {
    const t = idx[j]!;
    if (lp[t]! >= threshold || (protectedIds !== null && protectedIds.has(t))) idx[n++] = t;
  }
  c.n = n;
}

/**
 * 4c. XTC: remove every token whose probability (renormalised over the survivors) exceeds
 * `threshold`, except the least probable of those above it; `special` ids are exempt.
 * The caller decides (with its PRNG) whether XTC fires on this step.
 */
export function applyXtc(lp: Float32Array, c: Candidates, threshold: number, special: ReadonlySet<number>): void {
  materialize(lp, c);
  const idx = c.idx;
  let z = 0;
  for (let j = 0; j < c.n; j++) z += Math.exp(lp[idx[j]!]!);
  let minAbove = Infinity;
  for (let j = 0; j < c.n; j++) {
    const q = Math.exp(lp[idx[j]!]!) / z;
    if (q > threshold && q < minAbove) minAbove = q;
  }
  if (minAbove === Infinity) return;
  let n = 0;
  for (let j = 0; j < c.n; j++) {
    const t = idx[j]!;
    if (!(Math.exp(lp[t]!) / z > minAbove) || special.has(t)) idx[n++] = t;
  }
  c.n = n;
}

/** 4d. top-k: keep the k largest ℓ (ties: lower id first). No-op unless 0 < k < survivors. */
export function applyTopK(lp: Float32Array, c: Candidates, k: number): void {
  const count = c.all ? lp.length : c.n;
  if (k <= 0 || k >= count) return;
  const chosen = topKIds(lp, c.all ? null : c.idx, count, k);
  let n = 0;
  for (const t of chosen) if (lp[t]! > -Infinity) c.idx[n++] = t;
  c.n = n;
  c.all = false; // the list is in heap order: deterministic, which is all the sampler needs
}

/**
 * The ids of the k largest ℓ among `ids[0..count)` (or among all ids when `ids` is null),
 * ties broken towards the lower id, with a size-k min-heap: O(V log k), no vocab-sized
 * allocation.
 */
export function topKIds(lp: Float32Array, ids: Int32Array | null, count: number, k: number): Set<number> {
  const heap = new Int32Array(k);
  let size = 0;
  // "worse" = smaller ℓ, or equal ℓ and larger id.
  const worse = (a: number, b: number): boolean => lp[a]! < lp[b]! || (lp[a] === lp[b] && a > b);
  const siftDown = (): void => {
    let i = 0;
    const item = heap[0]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= size) break;
      const r = l + 1;
      const w = r < size && worse(heap[r]!, heap[l]!) ? r : l;
      if (!worse(heap[w]!, item)) break;
      heap[i] = heap[w]!;
      i = w;
    }
    heap[i] = item;
  };
  for (let j = 0; j < count; j++) {
    const t = ids === null ? j : ids[j]!;
    if (size < k) {
      let i = size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!worse(t, heap[parent]!)) break;
        heap[i] = heap[parent]!;
        i = parent;
      }
      heap[i] = t;
    } else if (worse(heap[0]!, t)) {
      heap[0] = t;
      siftDown();
    }
  }
  return new Set(heap.subarray(0, size));
}
