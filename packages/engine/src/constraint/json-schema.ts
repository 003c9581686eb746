/**
 * JSON Schema (and free-form JSON) → grammar.
 *
 * Supported: `type` (one or a list), `properties`, `required`, `additionalProperties` (false, true or
 * a schema), `items`, `prefixItems` (and draft-7 array `items` + `additionalItems`), `minItems`,
 * `maxItems`, `enum`, `const`, `minLength`, `maxLength`, `pattern` (a regular-expression subset:
 * literals, `.`, classes, `\d \w \s` and their negations, groups, `|`, `* + ? {m,n}`, anchors),
 * `format` (`date`, `time`, `date-time`, `uuid`, `ipv4`), `anyOf`, `oneOf` (when its branches
 * cannot both match), `allOf` with one branch, `$ref` to `#`, `#/$defs/…`, `#/definitions/…` or
 * any JSON pointer into the document (recursion allowed), `minimum: 0` on numbers.
 * Annotations (`title`, `description`, `default`, `examples`, `$schema`, `$id`, `$comment`, …) are
 * ignored. Anything else is refused with `SCHEMA_UNSUPPORTED`, naming the keyword and where it is.
 *
 * Output shape: properties in the schema's order, required ones always present, optional ones may
 * be left out; with `additionalProperties` absent no extra properties are generated (every such
 * output is still valid: extra properties are allowed, not required). Whitespace between tokens is
 * limited to a newline plus 20 spaces/tabs (or one space) so that an unsure model cannot loop on it;
 * numbers have at most 16 integer and 15 fraction digits.
 */
import { MlxcelError } from '../errors.js';
import { type Element, GrammarBuilder, type Grammar, type Sequence } from './grammar.js';

const { lit, ref, cls } = GrammarBuilder;

const ANNOTATIONS = new Set([
  'title', 'description', 'default', 'examples', '$schema', '$id', 'id', '$comment', 'deprecated', 'readOnly', 'writeOnly',
  '$defs', 'definitions', '$anchor', 'contentMediaType', 'contentEncoding', 'strict', 'name',
]);

const FORMATS: Record<string, string> = {
  date: '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|1\\d|2[0-8])$',
  time: '^([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,6})?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)$',
  'date-time': '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|1\\d|2[0-8])T([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,6})?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)$',
  uuid: '^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
  ipv4: '^((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)$',
};

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = boolean | { [k: string]: unknown };

function unsupported(path: string, what: string): never {
  throw new MlxcelError('SCHEMA_UNSUPPORTED', `JSON Schema at ${path || '#'}: ${what}`);
}

/** The shared JSON building blocks; identical (same rules, same order) in every JSON grammar. */
function jsonPrelude(b: GrammarBuilder): void {
  const ws = b.rule('json-ws');
  const str = b.rule('json-string');
  const chr = b.rule('json-char');
  const hex = cls([48, 57, 65, 70, 97, 102]);
  const value = b.rule('json-value');
  const obj = b.rule('json-object');
  const arr = b.rule('json-array');
  const num = b.rule('json-number');
  const int = b.rule('json-integer');
  const digits = (min: number, max: number) => b.repeat([cls([48, 57])], min, max, 'json-digits');
  b.define('json-ws', [[], lit(' '), [...lit('\n'), ...b.repeat([cls([32, 32, 9, 9])], 0, 20, 'json-indent')]]);
  b.define('json-char', [
    [cls([0x22, 0x22, 0x5c, 0x5c, 0, 0x1f], true)],
    [...lit('\\'), cls([0x22, 0x22, 0x5c, 0x5c, 0x2f, 0x2f, 0x62, 0x62, 0x66, 0x66, 0x6e, 0x6e, 0x72, 0x72, 0x74, 0x74])],
    [...lit('\\u'), hex, hex, hex, hex],
  ]);
  b.define('json-string', [[...lit('"'), b.star([ref(chr)], 'json-chars'), ...lit('"')]]);
  b.define('json-integer', [[b.opt(lit('-'), 'json-sign'), ref(b.helper('json-int-digits', [lit('0'), [cls([49, 57]), ...digits(0, 15)]]))]]);
  b.define('json-number', [[
    ref(int),
    b.opt([...lit('.'), ...digits(1, 15)], 'json-frac'),
    b.opt([cls([0x45, 0x45, 0x65, 0x65]), b.opt([cls([0x2b, 0x2b, 0x2d, 0x2d])], 'json-exp-sign'), ...digits(1, 3)], 'json-exp'),
  ]]);
  const member = b.helper('json-member', [[ref(str), ref(ws), ...lit(':'), ref(ws), ref(value)]]);
  b.define('json-object', [[...lit('{'), ref(ws), b.opt([ref(member), b.star([...lit(','), ref(ws), ref(member)], 'json-members')], 'json-body'), ref(ws), ...lit('}')]]);
  b.define('json-array', [[...lit('['), ref(ws), b.opt([ref(value), ref(ws), b.star([...lit(','), ref(ws), ref(value), ref(ws)], 'json-items')], 'json-elems'), ...lit(']')]]);
  b.define('json-value', [[ref(obj)], [ref(arr)], [ref(str)], [ref(num)], lit('true'), lit('false'), lit('null')]);
  void ws; void arr;
}


/**
 * How values are spelled. `json` is JSON; `gemma4` is the argument syntax of Gemma 4 tool calls
 * (`{city:<|"|>Paris<|"|>,days:3}`: bare keys in sorted order, strings between `<|"|>` escape tokens,
 * no whitespace), so the same schema compiler can force a call's arguments.
 */
export interface Dialect {
  readonly tag: string;
  /** Defines the prelude rules (value, string, number, …) in a fixed order. */
  prelude(b: GrammarBuilder): void;
  /** Prelude rule names. */
  readonly value: string; readonly object: string; readonly string: string; readonly char: string;
  readonly number: string; readonly integer: string;
  /** Whitespace allowed between tokens (null: none). */
  readonly ws: string | null;
  /** Opening and closing of a string. */
  quote(): Sequence;
  /** A property name as written. */
  key(name: string): Sequence;
  /** The canonical spelling of a constant. */
  literal(v: Json): string | Sequence;
  /** Whether a pattern character must be escaped (JSON: quote, backslash, controls). */
  readonly escapes: boolean;
  /** Property order: schema order (json) or sorted (gemma4, whose template sorts keys). */
  readonly sortKeys: boolean;
}

export const JSON_DIALECT: Dialect = {
  tag: 'json', prelude: jsonPrelude, value: 'json-value', object: 'json-object', string: 'json-string', char: 'json-char',
  number: 'json-number', integer: 'json-integer', ws: 'json-ws', quote: () => lit('"'), key: (n) => lit(JSON.stringify(n)),
  literal: (v) => JSON.stringify(v), escapes: true, sortKeys: false,
};

/** Gemma 4's escape token `<|"|>` must be a token of the tokenizer: its id is given. */
export function gemma4Dialect(quoteTokenId: number | null): Dialect {
  const quote = (): Sequence => (quoteTokenId !== null ? [{ t: 'token', id: quoteTokenId }] : lit('<|"|>'));
  const literal = (v: Json): Sequence => {
    if (typeof v === 'string') return [...quote(), ...lit(v), ...quote()];
    if (v === null || typeof v !== 'object') return lit(v === null ? 'null' : String(v));
    if (Array.isArray(v)) {
      const out: Sequence = lit('[');
      v.forEach((x, i) => { if (i) out.push(...lit(',')); out.push(...literal(x)); });
      return [...out, ...lit(']')];
    }
    const out: Sequence = lit('{');
    Object.keys(v).sort().forEach((k, i) => { if (i) out.push(...lit(',')); out.push(...lit(`${k}:`), ...literal(v[k]!)); });
    return [...out, ...lit('}')];
  };
  return {
    tag: `gemma4:${quoteTokenId}`, value: 'g-value', object: 'g-object', string: 'g-string', char: 'g-char', number: 'json-number', integer: 'json-integer', ws: null,
    quote, key: (n) => lit(n), literal, escapes: false, sortKeys: true,
    prelude(b) {
      jsonPrelude(b); // numbers
      const value = b.rule('g-value'), obj = b.rule('g-object'), arr = b.rule('g-array'), str = b.rule('g-string'), chr = b.rule('g-char');
      const key = b.rule('g-key');
      b.define('g-char', [[cls([], true)]]);
      b.define('g-string', [[...quote(), b.star([ref(chr)], 'g-chars'), ...quote()]]);
      b.define('g-key', [[cls([65, 90, 95, 95, 97, 122]), b.star([cls([48, 57, 65, 90, 95, 95, 97, 122])], 'g-key-rest')]]);
      const member = b.helper('g-member', [[ref(key), ...lit(':'), ref(value)]]);
      b.define('g-object', [[...lit('{'), b.opt([ref(member), b.star([...lit(','), ref(member)], 'g-members')], 'g-body'), ...lit('}')]]);
      b.define('g-array', [[...lit('['), b.opt([ref(value), b.star([...lit(','), ref(value)], 'g-items')], 'g-elems'), ...lit(']')]]);
      b.define('g-value', [[ref(obj)], [ref(arr)], [ref(str)], [ref(b.rule('json-number'))], lit('true'), lit('false'), lit('null')]);
    },
  };
}

/** Free-form JSON: one object (`json_object`), or any value. */
export function jsonGrammar(kind: 'object' | 'value' = 'object'): Grammar {
  const b = new GrammarBuilder('json_object', 'json');
  jsonPrelude(b);
  const shared = b.ruleCount();
  b.define('root', [[ref(b.rule('json-ws')), ref(b.rule(kind === 'object' ? 'json-object' : 'json-value')), ref(b.rule('json-ws'))]]);
  return b.build('root', shared);
}

/** Compiles a JSON Schema to a grammar whose sentences are JSON texts valid against it. */
export function jsonSchemaGrammar(schema: unknown): Grammar {
  if (typeof schema === 'string') {
    try { schema = JSON.parse(schema); } catch (e) { throw new MlxcelError('SCHEMA_INVALID', `JSON Schema is not valid JSON: ${(e as Error).message}`); }
  }
  if (typeof schema !== 'boolean' && (schema === null || typeof schema !== 'object' || Array.isArray(schema)))
    throw new MlxcelError('SCHEMA_INVALID', 'JSON Schema must be an object or a boolean');
  const b = new GrammarBuilder('JSON Schema', 'json');
  jsonPrelude(b);
  const shared = b.ruleCount();
  const c = new SchemaCompiler(b, schema as Schema);
  const body = c.value(schema as Schema, '#');
  const ws = ref(b.rule('json-ws'));
  b.define('root', [[ws, ...body, ws]]);
  return b.build('root', shared);
}

/**
 * Adds rules matching one value valid against `schema`, spelled in `dialect`, to a builder whose
 * prelude for that dialect is already defined; returns the sequence (for grammars that embed
 * arguments in a larger format, such as tool calls).
 */
export function schemaValue(b: GrammarBuilder, schema: unknown, dialect: Dialect, path = '#'): Sequence {
  return new SchemaCompiler(b, schema as Schema, dialect).value(schema as Schema, path);
}

class SchemaCompiler {
  private readonly refRules = new Map<string, number>();
  /** Whitespace between tokens, as a (possibly empty) sequence. */
  private readonly wsSeq: Sequence;

  constructor(private readonly b: GrammarBuilder, private readonly root: Schema, private readonly d: Dialect = JSON_DIALECT) {
    this.wsSeq = d.ws ? [ref(b.rule(d.ws))] : [];
  }

  private prelude(name: string): Element {
    return ref(this.b.rule(name));
  }

  /** A sequence matching one JSON value valid against `s`. */
  value(s: Schema, path: string): Sequence {
    if (s === true) return [this.prelude(this.d.value)];
    if (s === false) unsupported(path, 'the schema `false` matches no value');
    if (s === null || typeof s !== 'object' || Array.isArray(s)) unsupported(path, 'a schema must be an object or a boolean');
    const o = s as Record<string, unknown>;
    if ('$ref' in o) {
      const others = Object.keys(o).filter((k) => k !== '$ref' && !ANNOTATIONS.has(k));
      if (others.length) unsupported(path, `$ref next to other keywords (${others.join(', ')}) is not supported`);
      return [this.refTo(String(o.$ref), path)];
    }
    if ('const' in o) return this.literal(o.const as Json, `${path}/const`);
    if ('enum' in o) {
      if (!Array.isArray(o.enum) || o.enum.length === 0) unsupported(`${path}/enum`, 'enum must be a non-empty array');
      return [ref(this.b.helper('enum', o.enum.map((v, i) => this.literal(v as Json, `${path}/enum/${i}`))))];
    }
    if ('anyOf' in o || 'oneOf' in o) {
      const key = 'anyOf' in o ? 'anyOf' : 'oneOf';
      const list = o[key];
      if (!Array.isArray(list) || list.length === 0) unsupported(`${path}/${key}`, `${key} must be a non-empty array`);
      const rest = this.withoutKeys(o, [key]);
      const branches = list.map((x, i) => this.merge(rest, x as Schema, `${path}/${key}/${i}`));
      if (key === 'oneOf') this.checkDisjoint(branches, `${path}/oneOf`);
      return [ref(this.b.helper(key, branches.map((x, i) => this.value(x, `${path}/${key}/${i}`))))];
    }
    if ('allOf' in o) {
      const list = o.allOf;
      if (!Array.isArray(list) || list.length !== 1) unsupported(`${path}/allOf`, 'allOf is supported with exactly one schema');
      return this.value(this.merge(this.withoutKeys(o, ['allOf']), list[0] as Schema, `${path}/allOf/0`), path);
    }
    for (const k of Object.keys(o)) {
      if (!KNOWN.has(k) && !ANNOTATIONS.has(k)) unsupported(`${path}/${k}`, `keyword "${k}" is not supported`);
    }
    let types: string[];
    if (o.type === undefined) types = inferTypes(o);
    else types = Array.isArray(o.type) ? (o.type as string[]) : [o.type as string];
    for (const t of types) if (!TYPES.has(t)) unsupported(`${path}/type`, `unknown type ${JSON.stringify(t)}`);
    if (types.length === 0) unsupported(`${path}/type`, 'an empty type list matches no value');
    const alts = types.map((t) => this.typed(t, o, path));
    return alts.length === 1 ? alts[0]! : [ref(this.b.helper('types', alts))];
  }

  private typed(t: string, o: Record<string, unknown>, path: string): Sequence {
    switch (t) {
      case 'null': return lit('null');
      case 'boolean': return [ref(this.b.helper('boolean', [lit('true'), lit('false')]))];
      case 'integer': return this.numeric(o, path, true);
      case 'number': return this.numeric(o, path, false);
      case 'string': return this.string(o, path);
      case 'array': return this.array(o, path);
      case 'object': return this.object(o, path);
    }
    unsupported(path, `unknown type ${t}`);
  }

  private numeric(o: Record<string, unknown>, path: string, integer: boolean): Sequence {
    for (const k of ['maximum', 'exclusiveMaximum', 'exclusiveMinimum', 'multipleOf']) {
      if (k in o) unsupported(`${path}/${k}`, `keyword "${k}" is not supported`);
    }
    const base = this.prelude(integer ? this.d.integer : this.d.number);
    if ('minimum' in o) {
      if (o.minimum !== 0) unsupported(`${path}/minimum`, 'only minimum: 0 is supported');
      // Non-negative: the same grammar without the sign.
      const digits = [cls([48, 57])];
      const intPart = ref(this.b.helper('uint', [lit('0'), [cls([49, 57]), ...this.b.repeat(digits, 0, 15)]]));
      if (integer) return [intPart];
      return [intPart, this.b.opt([...lit('.'), ...this.b.repeat(digits, 1, 15)]),
        this.b.opt([cls([0x45, 0x45, 0x65, 0x65]), this.b.opt([cls([0x2b, 0x2b, 0x2d, 0x2d])]), ...this.b.repeat(digits, 1, 3)])];
    }
    return [base];
  }

  private string(o: Record<string, unknown>, path: string): Sequence {
    const min = this.count(o, 'minLength', path, 0);
    const max = this.count(o, 'maxLength', path, Infinity);
    if (max < min) unsupported(`${path}/maxLength`, 'maxLength is below minLength');
    let pattern: string | undefined;
    if ('format' in o) {
      const f = String(o.format);
      if (!(f in FORMATS)) unsupported(`${path}/format`, `format "${f}" is not supported (supported: ${Object.keys(FORMATS).join(', ')})`);
      pattern = FORMATS[f];
    }
    if ('pattern' in o) {
      if (pattern) unsupported(`${path}/pattern`, 'pattern together with format is not supported');
      if (typeof o.pattern !== 'string') unsupported(`${path}/pattern`, 'pattern must be a string');
      pattern = o.pattern;
    }
    if (pattern !== undefined) {
      if ('minLength' in o || 'maxLength' in o) unsupported(`${path}/pattern`, 'pattern (or format) together with minLength/maxLength is not supported');
      return [...this.d.quote(), ...new RegexCompiler(this.b, pattern, `${path}/pattern`, this.d).compile(), ...this.d.quote()];
    }
    if (min === 0 && max === Infinity) return [this.prelude(this.d.string)];
    return [...this.d.quote(), ...this.b.repeat([this.prelude(this.d.char)], min, max, 'chars'), ...this.d.quote()];
  }

  private count(o: Record<string, unknown>, key: string, path: string, dflt: number): number {
    if (!(key in o)) return dflt;
    const v = o[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) unsupported(`${path}/${key}`, `${key} must be a non-negative integer`);
    if (v > 10_000) unsupported(`${path}/${key}`, `${key} over 10000 is not supported`);
    return v;
  }

  private array(o: Record<string, unknown>, path: string): Sequence {
    for (const k of ['uniqueItems', 'contains', 'minContains', 'maxContains', 'unevaluatedItems']) {
      if (k in o && !(k === 'uniqueItems' && o[k] === false)) unsupported(`${path}/${k}`, `keyword "${k}" is not supported`);
    }
    const min = this.count(o, 'minItems', path, 0);
    const max = this.count(o, 'maxItems', path, Infinity);
    if (max < min) unsupported(`${path}/maxItems`, 'maxItems is below minItems');
    let prefix: Schema[] = [];
    let rest: Schema = true;
    if (Array.isArray(o.prefixItems)) {
      prefix = o.prefixItems as Schema[];
      if ('items' in o) rest = o.items as Schema;
    } else if (Array.isArray(o.items)) {
      prefix = o.items as Schema[];
      if ('additionalItems' in o) rest = o.additionalItems as Schema;
    } else if ('items' in o) rest = o.items as Schema;
    const ws = this.wsSeq;
    const sep: Sequence = [...ws, ...lit(','), ...ws];
    // items[i] for i < prefix.length, then `rest` (false: none).
    const itemAt = (i: number): Sequence | null => {
      if (i < prefix.length) return this.value(prefix[i]!, `${path}/prefixItems/${i}`);
      if (rest === false) return null;
      return this.value(rest, `${path}/items`);
    };
    const restMax = rest === false ? 0 : Infinity;
    const total = Math.min(max, prefix.length + restMax);
    if (total < min) unsupported(`${path}/minItems`, 'minItems cannot be met with the allowed items');
    // Chain: tail(i) = the items from index i on, each preceded by a separator (i ≥ 1).
    const restSeq = itemAt(prefix.length);
    const restRule = restSeq ? this.b.helper('item', [restSeq]) : -1;
    const tail = (i: number): Element | null => {
      if (i >= total) return null;
      const seq = i < prefix.length ? itemAt(i)! : [ref(restRule)];
      if (i >= prefix.length) {
        // Homogeneous remainder: repeat with the remaining bounds.
        const lo = Math.max(0, min - i), hi = total === Infinity ? Infinity : total - i;
        const one: Sequence = [...sep, ...seq];
        const reps = this.b.repeat(one, lo, hi, 'items');
        return ref(this.b.helper('items', [reps]));
      }
      const next = tail(i + 1);
      const body: Sequence = [...sep, ...seq, ...(next ? [next] : [])];
      return ref(this.b.helper('items', i + 1 > min ? [body, []] : [body]));
    };
    const first = (): Sequence[] => {
      if (total === 0) return [[]];
      const seq0 = 0 < prefix.length ? itemAt(0)! : [ref(restRule)];
      const next = tail(1);
      const withItems: Sequence = [...ws, ...seq0, ...(next ? [next] : [])];
      return min === 0 ? [withItems, []] : [withItems];
    };
    return [...lit('['), ref(this.b.helper('array', first())), ...ws, ...lit(']')];
  }

  private object(o: Record<string, unknown>, path: string): Sequence {
    for (const k of ['patternProperties', 'propertyNames', 'minProperties', 'maxProperties', 'dependentRequired', 'dependentSchemas', 'dependencies', 'unevaluatedProperties']) {
      if (k in o) unsupported(`${path}/${k}`, `keyword "${k}" is not supported`);
    }
    const props = (o.properties ?? {}) as Record<string, Schema>;
    if (typeof props !== 'object' || Array.isArray(props)) unsupported(`${path}/properties`, 'properties must be an object');
    const required = new Set((o.required ?? []) as string[]);
    if (!Array.isArray(o.required ?? [])) unsupported(`${path}/required`, 'required must be an array');
    for (const r of required) if (!(r in props) && o.additionalProperties === false) unsupported(`${path}/required`, `required property "${r}" is not allowed by additionalProperties: false`);
    const names = Object.keys(props);
    // Required names missing from properties are still generated, with any value.
    for (const r of required) if (!(r in props)) names.push(r);
    if (this.d.sortKeys) names.sort();
    const extra = o.additionalProperties;
    const ws = this.wsSeq;
    const kv = (name: string): Sequence => [...this.d.key(name), ...ws, ...lit(':'), ...ws, ...this.value(name in props ? props[name]! : true, `${path}/properties/${name}`)];
    let extraRule: number | null = null;
    if (extra !== undefined && extra !== false) {
      const valueSeq = this.value(extra as Schema, `${path}/additionalProperties`);
      let key: Sequence;
      if (this.d.escapes) key = names.length ? [ref(this.keyExcluding(names))] : [this.prelude(this.d.string)];
      else if (names.length) unsupported(`${path}/additionalProperties`, 'additionalProperties next to properties is not supported in tool-call arguments');
      else key = [ref(this.b.rule('g-key'))];
      extraRule = this.b.helper('extra-member', [[...key, ...ws, ...lit(':'), ...ws, ...valueSeq]]);
    }
    // seq(i, prev): members from names[i] on; prev = something was emitted (a comma comes first).
    const memo = new Map<string, Element>();
    const seq = (i: number, prev: boolean): Sequence => {
      const comma: Sequence = prev ? [...ws, ...lit(','), ...ws] : [];
      if (i === names.length) {
        if (extraRule === null) return [];
        const more = this.b.star([...ws, ...lit(','), ...ws, ref(extraRule)], 'extra');
        return prev ? [more] : [ref(this.b.helper('extras', [[ref(extraRule), more], []]))];
      }
      const k = `${i},${prev}`;
      if (!memo.has(k)) {
        const id = this.b.fresh('props');
        memo.set(k, ref(id));
        const present: Sequence = [...comma, ...kv(names[i]!), ...seq(i + 1, true)];
        this.b.defineRule(id, required.has(names[i]!) ? [present] : [present, seq(i + 1, prev)]);
      }
      return [memo.get(k)!];
    };
    return [...lit('{'), ...ws, ...seq(0, false), ...ws, ...lit('}')];
  }

  /** A JSON string that is none of `names` (extra keys must not repeat a declared property). */
  private keyExcluding(names: string[]): number {
    // Trie over the names' code points; off the trie any character (escapes too) may follow.
    type Node = { kids: Map<number, Node>; end: boolean };
    const rootN: Node = { kids: new Map(), end: false };
    for (const n of names) {
      let cur = rootN;
      for (const ch of n) {
        const cp = ch.codePointAt(0)!;
        let nx = cur.kids.get(cp);
        if (!nx) cur.kids.set(cp, (nx = { kids: new Map(), end: false }));
        cur = nx;
      }
      cur.end = true;
    }
    const free = this.b.star([this.prelude('json-char')], 'key-rest');
    const build = (node: Node): number => {
      const alts: Sequence[] = [];
      if (!node.end) alts.push(lit('"'));
      const ranges: number[] = [];
      for (const [cp, child] of node.kids) {
        if (cp === 0x22 || cp === 0x5c || cp < 0x20) continue; // such names are matched only via escapes: leave them out of the trie path
        alts.push([...lit(String.fromCodePoint(cp)), ref(build(child))]);
        ranges.push(cp, cp);
      }
      // Leaving the trie: a plain character no name continues with, then any string rest.
      alts.push([cls([0x22, 0x22, 0x5c, 0x5c, 0, 0x1f, ...ranges], true), free, ...lit('"')]);
      return this.b.helper('key', alts);
    };
    return this.b.helper('key-excluding', [[...lit('"'), ref(build(rootN))]]);
  }

  /** The canonical JSON text of a value. */
  private literal(v: Json, path: string): Sequence {
    let out: string | Sequence;
    try { out = this.d.literal(v); } catch { unsupported(path, 'value is not JSON'); }
    if (out === undefined) unsupported(path, 'value is not JSON');
    return typeof out === 'string' ? lit(out) : out;
  }

  private refTo(pointer: string, path: string): Element {
    let id = this.refRules.get(pointer);
    if (id !== undefined) return ref(id);
    if (!pointer.startsWith('#')) unsupported(`${path}/$ref`, `only local references ("#/...") are supported, got ${JSON.stringify(pointer)}`);
    let target: unknown = this.root;
    const parts = pointer === '#' ? [] : pointer.slice(1).split('/').slice(1);
    if (pointer !== '#' && !pointer.startsWith('#/')) unsupported(`${path}/$ref`, `anchor references (${pointer}) are not supported`);
    for (const raw of parts) {
      const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
      if (target === null || typeof target !== 'object' || !(key in (target as object)))
        throw new MlxcelError('SCHEMA_INVALID', `JSON Schema at ${path}/$ref: ${pointer} does not resolve (no "${key}")`);
      target = (target as Record<string, unknown>)[key];
    }
    id = this.b.fresh('ref');
    this.refRules.set(pointer, id);
    this.b.defineRule(id, [this.value(target as Schema, pointer)]);
    return ref(id);
  }

  private withoutKeys(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
    const r: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) if (!keys.includes(k)) r[k] = v;
    return r;
  }

  /** Sibling keywords of anyOf/oneOf/allOf apply to each branch: merge where that is simple. */
  private merge(outer: Record<string, unknown>, branch: Schema, path: string): Schema {
    const meaningful = Object.keys(outer).filter((k) => !ANNOTATIONS.has(k));
    if (meaningful.length === 0) return branch;
    if (typeof branch === 'boolean') return branch ? outer : false;
    const out: Record<string, unknown> = { ...branch };
    for (const k of meaningful) {
      if (k === 'properties') out.properties = { ...(outer.properties as object), ...(branch.properties as object) };
      else if (k === 'required') out.required = [...new Set([...(outer.required as string[]), ...((branch.required as string[]) ?? [])])];
      else if (!(k in branch)) out[k] = outer[k];
      else if (JSON.stringify(branch[k]) !== JSON.stringify(outer[k])) unsupported(path, `keyword "${k}" both next to and inside a branch is not supported`);
    }
    return out;
  }

  /** oneOf needs exactly one match: accept it only when no value can match two branches. */
  private checkDisjoint(branches: Schema[], path: string): void {
    const sig = branches.map((s) => this.signature(s));
    for (let i = 0; i < sig.length; i++) {
      for (let j = i + 1; j < sig.length; j++) {
        const a = sig[i]!, b = sig[j]!;
        const sharedTypes = a.types.filter((t) => b.types.includes(t) || (t === 'integer' && b.types.includes('number')) || (t === 'number' && b.types.includes('integer')));
        if (sharedTypes.length === 0) continue;
        if (a.consts && b.consts && !a.consts.some((x) => b.consts!.includes(x))) continue;
        // Objects told apart by a required property with different constants.
        if (sharedTypes.every((t) => t === 'object') && a.tags && b.tags) {
          if ([...a.tags.keys()].some((k) => b.tags!.has(k) && !a.tags!.get(k)!.some((x) => b.tags!.get(k)!.includes(x)))) continue;
        }
        unsupported(`${path}`, `oneOf branches ${i} and ${j} can match the same value (a grammar cannot exclude a value matching both); use anyOf, or make the branches disjoint (different types, or a required property with different const/enum values)`);
      }
    }
  }

  private signature(s: Schema, depth = 0): { types: string[]; consts: string[] | null; tags: Map<string, string[]> | null } {
    if (typeof s === 'boolean' || depth > 20) return { types: [...TYPES], consts: null, tags: null };
    if (typeof s.$ref === 'string') return this.signature(this.resolve(s.$ref), depth + 1);
    if ('const' in s) return { types: [jsonType(s.const)], consts: [JSON.stringify(s.const)], tags: null };
    if (Array.isArray(s.enum)) return { types: [...new Set(s.enum.map(jsonType))], consts: s.enum.map((v) => JSON.stringify(v)), tags: null };
    const types = s.type === undefined ? inferTypes(s) : Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    let tags: Map<string, string[]> | null = null;
    if (types.length === 1 && types[0] === 'object' && s.properties) {
      tags = new Map();
      for (const r of (s.required as string[] | undefined) ?? []) {
        const p = (s.properties as Record<string, Schema>)[r];
        if (p && typeof p === 'object') {
          const sig = this.signature(p, depth + 1);
          if (sig.consts) tags.set(r, sig.consts);
        }
      }
    }
    return { types, consts: null, tags };
  }

  private resolve(pointer: string): Schema {
    let t: unknown = this.root;
    for (const raw of pointer === '#' ? [] : pointer.slice(2).split('/')) t = (t as Record<string, unknown> | undefined)?.[raw.replaceAll('~1', '/').replaceAll('~0', '~')];
    return (t ?? true) as Schema;
  }
}

/** What JavaScript's \s matches (ajv runs patterns as JS regular expressions). */
const JS_SPACE = [9, 13, 32, 32, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000, 0xfeff, 0xfeff];

const TYPES = new Set(['null', 'boolean', 'integer', 'number', 'string', 'array', 'object']);
const KNOWN = new Set([
  'type', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'additionalItems', 'minItems', 'maxItems',
  'minLength', 'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'uniqueItems', 'contains', 'minContains', 'maxContains', 'patternProperties', 'propertyNames', 'minProperties', 'maxProperties',
  'dependentRequired', 'dependentSchemas', 'dependencies', 'unevaluatedProperties', 'unevaluatedItems',
]);

/** Types a schema without `type` can match, from the keywords it uses. */
function inferTypes(o: Record<string, unknown>): string[] {
  const has = (...ks: string[]) => ks.some((k) => k in o);
  const t: string[] = [];
  if (has('properties', 'required', 'additionalProperties', 'patternProperties', 'minProperties', 'maxProperties')) t.push('object');
  if (has('items', 'prefixItems', 'minItems', 'maxItems', 'additionalItems', 'uniqueItems', 'contains')) t.push('array');
  if (has('minLength', 'maxLength', 'pattern', 'format')) t.push('string');
  if (has('minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf')) t.push('number');
  return t.length ? t : [...TYPES];
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/**
 * A regular-expression subset → grammar elements matching the JSON string *contents* (characters
 * that JSON must escape are emitted in their escaped form).
 */
class RegexCompiler {
  private i = 0;
  constructor(private readonly b: GrammarBuilder, private readonly src: string, private readonly path: string, private readonly d: Dialect = JSON_DIALECT) {}

  compile(): Sequence {
    let s = this.src;
    const anchoredStart = s.startsWith('^');
    const anchoredEnd = s.endsWith('$') && !s.endsWith('\\$');
    if (anchoredStart) this.i = 1;
    const end = anchoredEnd ? s.length - 1 : s.length;
    s = this.src.slice(0, end);
    const alts = this.alternatives(s);
    if (this.i < s.length) this.fail(`unexpected ${JSON.stringify(s[this.i])}`);
    const body = ref(this.b.helper('pattern', alts));
    const anyChar = [ref(this.b.rule(this.d.char))];
    const out: Sequence = [];
    if (!anchoredStart) out.push(this.b.star(anyChar, 'pattern-any'));
    out.push(body);
    if (!anchoredEnd) out.push(this.b.star(anyChar, 'pattern-any'));
    return out;
  }

  private fail(msg: string): never {
    unsupported(this.path, `pattern ${JSON.stringify(this.src)}: ${msg}`);
  }

  private alternatives(s: string): Sequence[] {
    const alts: Sequence[] = [this.sequence(s)];
    while (s[this.i] === '|') { this.i++; alts.push(this.sequence(s)); }
    return alts;
  }

  private sequence(s: string): Sequence {
    const seq: Sequence = [];
    while (this.i < s.length && s[this.i] !== '|' && s[this.i] !== ')') {
      const atom = this.atom(s);
      const q = this.quantifier(s);
      if (q) seq.push(...this.b.repeat(atom, q[0], q[1], 'pattern-rep'));
      else seq.push(...atom);
    }
    return seq;
  }

  private quantifier(s: string): [number, number] | null {
    const c = s[this.i];
    let q: [number, number] | null = null;
    if (c === '*') { this.i++; q = [0, Infinity]; }
    else if (c === '+') { this.i++; q = [1, Infinity]; }
    else if (c === '?') { this.i++; q = [0, 1]; }
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(s.slice(this.i));
      if (!m) this.fail('malformed {m,n} quantifier');
      this.i += m[0].length;
      const lo = Number(m[1]);
      const hi = m[2] === undefined ? lo : m[3] === '' ? Infinity : Number(m[3]);
      if (hi < lo || lo > 1000 || (hi !== Infinity && hi > 1000)) this.fail('quantifier bounds out of range');
      q = [lo, hi];
    }
    if (q && s[this.i] === '?') this.i++; // lazy: same language
    return q;
  }

  private atom(s: string): Sequence {
    const c = s[this.i]!;
    if (c === '(') {
      this.i++;
      if (s.startsWith('?:', this.i)) this.i += 2;
      else if (s[this.i] === '?') this.fail('lookaround and named groups are not supported');
      const alts = this.alternatives(s);
      if (s[this.i] !== ')') this.fail('unclosed group');
      this.i++;
      return [ref(this.b.helper('pattern-group', alts))];
    }
    if (c === '[') return this.charSet(this.readClass(s));
    if (c === '.') { this.i++; return this.charSet({ ranges: [10, 10, 13, 13, 0x2028, 0x2029], neg: true }); }
    if (c === '^' || c === '$') this.fail('anchors inside the pattern are not supported');
    if (c === '\\') {
      const set = this.escape(s);
      return this.charSet(set);
    }
    if ('*+?{'.includes(c)) this.fail(`nothing to repeat before ${c}`);
    const cp = s.codePointAt(this.i)!;
    this.i += cp > 0xffff ? 2 : 1;
    return this.charSet({ ranges: [cp, cp], neg: false });
  }

  private escape(s: string): { ranges: number[]; neg: boolean } {
    const e = s[this.i + 1];
    if (e === undefined) this.fail('trailing backslash');
    this.i += 2;
    const sets: Record<string, { ranges: number[]; neg: boolean }> = {
      d: { ranges: [48, 57], neg: false }, D: { ranges: [48, 57], neg: true },
      w: { ranges: [48, 57, 65, 90, 95, 95, 97, 122], neg: false }, W: { ranges: [48, 57, 65, 90, 95, 95, 97, 122], neg: true },
      s: { ranges: JS_SPACE, neg: false }, S: { ranges: JS_SPACE, neg: true },
    };
    if (e in sets) return sets[e]!;
    const ctl: Record<string, number> = { n: 10, r: 13, t: 9, f: 12, v: 11 };
    if (e in ctl) return { ranges: [ctl[e]!, ctl[e]!], neg: false };
    if (e === 'u') {
      const h = s.slice(this.i, this.i + 4);
      if (!/^[0-9a-fA-F]{4}$/.test(h)) this.fail('malformed \\u escape');
      this.i += 4;
      const v = parseInt(h, 16);
      return { ranges: [v, v], neg: false };
    }
    if (/[0-9bBkpP]/.test(e)) this.fail(`\\${e} is not supported`);
    const cp = e.codePointAt(0)!;
    return { ranges: [cp, cp], neg: false };
  }

  private readClass(s: string): { ranges: number[]; neg: boolean } {
    this.i++;
    let neg = false;
    if (s[this.i] === '^') { neg = true; this.i++; }
    const ranges: number[] = [];
    let first = true;
    while (this.i < s.length && (s[this.i] !== ']' || first)) {
      first = false;
      let lo: number;
      if (s[this.i] === '\\') {
        const set = this.escape(s);
        if (set.neg || set.ranges.length > 2) {
          if (set.neg) this.fail('negated escapes inside a class are not supported');
          ranges.push(...set.ranges);
          continue;
        }
        lo = set.ranges[0]!;
      } else { lo = s.codePointAt(this.i)!; this.i += lo > 0xffff ? 2 : 1; }
      let hi = lo;
      if (s[this.i] === '-' && s[this.i + 1] !== ']' && this.i + 1 < s.length) {
        this.i++;
        if (s[this.i] === '\\') { const set = this.escape(s); hi = set.ranges[0]!; }
        else { hi = s.codePointAt(this.i)!; this.i += hi > 0xffff ? 2 : 1; }
        if (hi < lo) this.fail('reversed range in a class');
      }
      ranges.push(lo, hi);
    }
    if (s[this.i] !== ']') this.fail('unclosed [');
    this.i++;
    return { ranges, neg };
  }

  /** One character from a set, as JSON string content: plain where JSON allows, else its escape. */
  private charSet(set: { ranges: number[]; neg: boolean }): Sequence {
    if (!this.d.escapes) return [cls(set.ranges, set.neg)];
    const special = [0x22, 0x5c];
    for (let c = 0; c < 0x20; c++) special.push(c);
    const inSet = (cp: number) => {
      let hit = false;
      for (let k = 0; k < set.ranges.length; k += 2) if (cp >= set.ranges[k]! && cp <= set.ranges[k + 1]!) hit = true;
      return hit !== set.neg;
    };
    const alts: Sequence[] = [];
    // Plain characters: the set minus what JSON must escape.
    const plain = set.neg
      ? cls([...set.ranges, 0x22, 0x22, 0x5c, 0x5c, 0, 0x1f], true)
      : null;
    if (plain) alts.push([plain]);
    else {
      const r: number[] = [];
      for (let k = 0; k < set.ranges.length; k += 2) {
        // Cut the JSON-special code points out of each range.
        let lo = set.ranges[k]!;
        const hi = set.ranges[k + 1]!;
        for (const sp of [...special].sort((a, b) => a - b)) {
          if (sp < lo || sp > hi) continue;
          if (sp > lo) r.push(lo, sp - 1);
          lo = sp + 1;
        }
        if (lo <= hi) r.push(lo, hi);
      }
      if (r.length) alts.push([cls(r)]);
    }
    for (const sp of special) {
      if (!inSet(sp)) continue;
      alts.push(lit(JSON.stringify(String.fromCharCode(sp)).slice(1, -1)));
    }
    if (!alts.length) this.fail('a character set that matches nothing');
    return alts.length === 1 && alts[0]!.length === 1 ? alts[0]! : [ref(this.b.helper('pattern-char', alts))];
  }
}
