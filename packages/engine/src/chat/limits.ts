/**
 * Limits on chat-template rendering. A template is code from the model download: without limits
 * `{% for i in range(100000000) %}` builds a 10⁸-element list (4.5 GB), two nested loops over
 * `range(10000)` run for minutes, and `{% set s = s ~ s %}` in a loop doubles a string until memory
 * runs out. Real templates (Gemma, Phi, Llama, Qwen) stay far below every limit here: a 100-turn
 * conversation evaluates on the order of 10⁵ template nodes.
 *
 * How — only while a budgeted render is active, otherwise both wrappers pass straight through:
 * - the `range` global that the library installs in each render's Environment is swapped for a bounded
 *   one (a context variable cannot shadow it: the library refuses to declare a name twice);
 * - the interpreter's `evaluate` counts nodes, checks the clock every 1024 nodes and the length of every
 *   string it produces.
 * Rendering is synchronous, so one module-level "active budget" is enough.
 */
import { Environment, Interpreter } from '@huggingface/jinja';
import { MlxcelError } from '../errors.js';

export interface TemplateLimits {
  /** Template nodes evaluated per render (loop bodies count once per iteration). */
  maxSteps: number;
  /** Wall-clock milliseconds per render. */
  maxMs: number;
  /** Characters of any string the template builds, the output included. */
  maxChars: number;
  /** Elements of one `range(...)` call. */
  maxRange: number;
}

export const DEFAULT_TEMPLATE_LIMITS: Readonly<TemplateLimits> = Object.freeze({
  maxSteps: 5_000_000,
  maxMs: 10_000,
  maxChars: 64 * 1024 * 1024,
  maxRange: 100_000,
});

interface ActiveBudget {
  limits: TemplateLimits;
  range: (start: number, stop?: number, step?: number) => number[];
  source: string;
  steps: number;
  deadline: number;
}

let active: ActiveBudget | null = null;

function exceeded(b: ActiveBudget, what: string): never {
  throw new MlxcelError('CHAT_TEMPLATE_LIMIT', `${b.source}: rendering stopped, ${what}`);
}

type Evaluate = (this: unknown, statement: unknown, environment: unknown) => { type?: string; value?: unknown };
const proto = Interpreter.prototype as unknown as { evaluate: Evaluate; __mlxcelBudget?: true };
if (!proto.__mlxcelBudget) {
  const original = proto.evaluate;
  proto.evaluate = function budgetedEvaluate(statement, environment) {
    const b = active;
    if (b !== null) {
      if (++b.steps > b.limits.maxSteps) exceeded(b, `the template evaluated more than ${b.limits.maxSteps} nodes (a runaway loop?)`);
      if ((b.steps & 1023) === 0 && Date.now() > b.deadline) exceeded(b, `it ran longer than ${b.limits.maxMs} ms`);
    }
    const r = original.call(this, statement, environment);
    if (b !== null && r && r.type === 'StringValue' && typeof r.value === 'string' && r.value.length > b.limits.maxChars)
      exceeded(b, `it built a string of ${r.value.length} characters (limit ${b.limits.maxChars})`);
    return r;
  };
  proto.__mlxcelBudget = true;
  const envProto = Environment.prototype as unknown as { set(name: string, value: unknown): unknown };
  const originalSet = envProto.set;
  envProto.set = function budgetedSet(name: string, value: unknown) {
    return originalSet.call(this, name, active !== null && name === 'range' ? active.range : value);
  };
}

/** Python's range with a cap on the element count (jinja's `range` global, bounded). */
function boundedRange(limits: TemplateLimits, source: string) {
  return (start: number, stop?: number, step = 1): number[] => {
    if (stop === undefined) [start, stop] = [0, start];
    for (const [n, v] of [['start', start], ['stop', stop], ['step', step]] as const)
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw new MlxcelError('CHAT_TEMPLATE_ERROR', `${source}: range() ${n} must be a number, got ${String(v)}`);
    if (step === 0) throw new MlxcelError('CHAT_TEMPLATE_ERROR', `${source}: range() step must not be zero`);
    const count = Math.max(0, Math.ceil((stop - start) / step));
    if (count > limits.maxRange)
      throw new MlxcelError('CHAT_TEMPLATE_LIMIT', `${source}: range(${start}, ${stop}, ${step}) has ${count} elements (limit ${limits.maxRange})`);
    const out: number[] = [];
    for (let i = 0; i < count; i++) out.push(start + i * step);
    return out;
  };
}

/** Runs `render` under `limits`; throws MlxcelError CHAT_TEMPLATE_LIMIT naming the template and the limit. */
export function withTemplateLimits<T>(source: string, limits: TemplateLimits, render: () => T): T {
  const outer = active;
  active = { limits, source, range: boundedRange(limits, source), steps: 0, deadline: Date.now() + limits.maxMs };
  try {
    return render();
  } finally {
    active = outer;
  }
}
