/**
 * The logit trace (`mlxcel trace`): a prompt forward (optionally chunked, through the session core's
 * PromptPrefill) and an optional greedy continuation, written as safetensors with the fixture contract's
 * tensor names (plus `embeddings` / `hidden_states.<layer>` with dumpLayers), and a comparison of two
 * traces.
 */
import { SafetensorsFile, Tensor, writeSafetensors, type LanguageModel } from '@mlxcel/tensor';
import { MlxcelError } from './errors.js';
import { Sampler } from './sampling/index.js';
import { decodeOne, PromptPrefill } from './session.js';

export interface TraceOptions {
  /** Prefill chunk size; 0/undefined = one pass. */
  chunk?: number;
  /** Greedy continuation length. */
  decode?: number;
  kvCache?: string;
  /** Also keep every named intermediate of the prompt forward (`embeddings`, `hidden_states.<layer>`). */
  dumpLayers?: boolean;
}

export interface TraceResult {
  inputIds: Int32Array;
  /** [T, vocab] logits of the prompt forward. */
  logits: Float32Array;
  greedyIds?: Int32Array;
  /** [N, vocab]: row i chose greedyIds[i] (row 0 = last prompt row). */
  greedyLogits?: Float32Array;
  /** With dumpLayers: each named intermediate over the prompt's T rows, [T, width]. */
  hiddenStates?: Map<string, { values: Float32Array; width: number }>;
}

export function traceModel(model: LanguageModel, ids: Int32Array, opts: TraceOptions = {}): TraceResult {
  const V = model.vocabSize;
  const T = ids.length;
  if (T === 0) throw new MlxcelError('PROMPT_EMPTY', 'trace: no input ids');
  for (const id of ids) if (id < 0 || id >= V) throw new MlxcelError('BAD_INPUT', `trace: token id ${id} is outside the vocabulary [0, ${V})`);
  const state = model.newState({ kvCache: opts.kvCache });
  const hiddenStates = opts.dumpLayers ? new Map<string, { values: Float32Array; width: number }>() : undefined;
  const prefill = new PromptPrefill(model, state, ids, {
    chunk: opts.chunk ?? 0,
    logits: 'all',
    forward: hiddenStates ? { onHiddenState: (name, values, width) => keepRows(hiddenStates, name, values, width, prefill, T) } : {},
  });
  const logits = new Float32Array(T * V);
  while (!prefill.finished) {
    const at = prefill.done;
    logits.set(prefill.next(), at * V);
  }
  const result: TraceResult = { inputIds: ids, logits, ...(hiddenStates ? { hiddenStates } : {}) };
  const N = opts.decode ?? 0;
  if (N > 0) {
    // Greedy exactly as generate() picks at temperature 0, suppressed ids excluded.
    const greedy = new Sampler({ temperature: 0, suppressedIds: model.suppressedTokenIds() });
    const greedyIds = new Int32Array(N);
    const greedyLogits = new Float32Array(N * V);
    let row = logits.subarray((T - 1) * V, T * V);
    for (let n = 0; n < N; n++) {
      greedyLogits.set(row, n * V);
      const tok = greedy.sample(row).token;
      greedyIds[n] = tok;
      if (n + 1 < N) row = decodeOne(model, state, tok).slice();
    }
    result.greedyIds = greedyIds;
    result.greedyLogits = greedyLogits;
  }
  return result;
}

/**
 * Copies one intermediate of the chunk now running into its [T, width] tensor: the chunk's rows are
 * the last `len` rows the model reports (a model may feed more, e.g. a re-encoded prefix).
 */
function keepRows(
  into: Map<string, { values: Float32Array; width: number }>, name: string, values: Float32Array, width: number, p: PromptPrefill, T: number,
): void {
  let t = into.get(name);
  if (!t) into.set(name, (t = { values: new Float32Array(T * width), width }));
  const start = p.done, len = Math.min(p.chunk, T - start);
  t.values.set(values.subarray(values.length - len * width), start * width);
}

export function writeTrace(path: string, r: TraceResult, V: number, extra: Record<string, Tensor> = {}): void {
  const t: Record<string, Tensor> = {
    input_ids: Tensor.fromI32(r.inputIds),
    logits: Tensor.fromF32(r.logits, [r.inputIds.length, V]),
  };
  if (r.greedyIds && r.greedyLogits) {
    t.greedy_ids = Tensor.fromI32(r.greedyIds);
    t.greedy_logits = Tensor.fromF32(r.greedyLogits, [r.greedyIds.length, V]);
  }
  for (const [name, h] of r.hiddenStates ?? []) t[name] = Tensor.fromF32(h.values, [r.inputIds.length, h.width]);
  writeSafetensors(path, { ...t, ...extra }, { format: 'mlxcel-trace' });
}

export interface TensorComparison {
  name: string;
  shape: number[];
  maxAbsDiff: number;
  /** Rows whose top-1 differs (2-D float tensors only). */
  argmaxDisagreements?: number;
  /** Rows where both sides' top-1 margins exceed the threshold and the top-1 differ. */
  decidedDisagreements?: number;
  equal?: boolean;
}

export interface TraceComparison {
  tensors: TensorComparison[];
  onlyInA: string[];
  onlyInB: string[];
  /** Perplexity of input_ids[1:] under each side's logits (when both have them). */
  perplexity?: { a: number; b: number };
}

function top2(row: Float32Array): { idx: number; margin: number } {
  let i1 = 0, v1 = -Infinity, v2 = -Infinity;
  for (let i = 0; i < row.length; i++) {
    const v = row[i]!;
    if (v > v1) { v2 = v1; v1 = v; i1 = i; } else if (v > v2) v2 = v;
  }
  return { idx: i1, margin: v1 - v2 };
}

/** Perplexity of ids[1:] given logits rows [T, V] (row t predicts ids[t+1]). */
export function perplexity(logits: Float32Array, ids: Int32Array, V: number): number {
  let nll = 0;
  const T = ids.length;
  if (T < 2) return NaN;
  for (let t = 0; t + 1 < T; t++) {
    const row = logits.subarray(t * V, (t + 1) * V);
    let m = -Infinity;
    for (let i = 0; i < V; i++) m = Math.max(m, row[i]!);
    let s = 0;
    for (let i = 0; i < V; i++) s += Math.exp(row[i]! - m);
    nll -= row[ids[t + 1]!]! - m - Math.log(s);
  }
  return Math.exp(nll / (T - 1));
}

export function compareTraces(pathA: string, pathB: string, opts: { marginThreshold?: number } = {}): TraceComparison {
  const a = SafetensorsFile.open(pathA), b = SafetensorsFile.open(pathB);
  const thr = opts.marginThreshold ?? 0.1;
  const names = [...a.tensors.keys()].filter((n) => b.has(n)).sort();
  const tensors: TensorComparison[] = [];
  for (const name of names) {
    const ta = a.get(name), tb = b.get(name);
    if (ta.shape.join() !== tb.shape.join()) {
      tensors.push({ name, shape: [...ta.shape], maxAbsDiff: Infinity, equal: false });
      continue;
    }
    const isInt = ta.dtype.startsWith('I') || ta.dtype.startsWith('U');
    const va = isInt ? ta.toI32() : ta.toF32(), vb = isInt ? tb.toI32() : tb.toF32();
    let md = 0;
    for (let i = 0; i < va.length; i++) md = Math.max(md, Math.abs(va[i]! - vb[i]!));
    const c: TensorComparison = { name, shape: [...ta.shape], maxAbsDiff: md };
    if (isInt) c.equal = md === 0;
    if (!isInt && ta.shape.length === 2) {
      const [R, V] = ta.shape as [number, number];
      let dis = 0, decided = 0;
      for (let r = 0; r < R; r++) {
        const x = top2((va as Float32Array).subarray(r * V, (r + 1) * V)), y = top2((vb as Float32Array).subarray(r * V, (r + 1) * V));
        if (x.idx !== y.idx) {
          dis++;
          if (x.margin > thr && y.margin > thr) decided++;
        }
      }
      c.argmaxDisagreements = dis;
      c.decidedDisagreements = decided;
    }
    tensors.push(c);
  }
  const res: TraceComparison = {
    tensors,
    onlyInA: [...a.tensors.keys()].filter((n) => !b.has(n)),
    onlyInB: [...b.tensors.keys()].filter((n) => !a.has(n)),
  };
  if (a.has('logits') && b.has('logits') && a.has('input_ids')) {
    const ids = a.get('input_ids').toI32();
    const V = a.get('logits').shape[1]!;
    res.perplexity = { a: perplexity(a.get('logits').toF32(), ids, V), b: perplexity(b.get('logits').toF32(), ids, V) };
  }
  return res;
}
