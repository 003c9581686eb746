/** mlxcel generate --json-schema / --grammar, spawned as a user would run it. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mlxcel } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'mlxcel-cli-structured-'));
const cacheEnv = { MLXCEL_CACHE: join(tmp, 'cache') };

describe('generate with a constraint', () => {
  it('--json-schema gives JSON valid against the schema', async () => {
    const file = join(tmp, 'schema.json');
    writeFileSync(file, JSON.stringify({ type: 'object', properties: { n: { type: 'integer' }, ok: { type: 'boolean' } }, required: ['n', 'ok'], additionalProperties: false }));
    const r = await mlxcel(['generate', '--demo', '--prompt', 'x', '--temp', '1', '--seed', '5', '--max-tokens', '40', '--json-schema', file, '--json'], { env: cacheEnv });
    expect(r.code, r.stderr).toBe(0);
    const v = JSON.parse(JSON.parse(r.stdout).text);
    expect(Object.keys(v)).toEqual(['n', 'ok']);
    expect(Number.isInteger(v.n)).toBe(true);
    expect(typeof v.ok).toBe('boolean');
  });

  it('--grammar follows a GBNF file', async () => {
    const file = join(tmp, 'g.gbnf');
    writeFileSync(file, 'root ::= ("yes" | "no") "!"\n');
    const r = await mlxcel(['generate', '--demo', '--prompt', 'x', '--temp', '1', '--seed', '2', '--grammar', file, '--json'], { env: cacheEnv });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).text).toMatch(/^(yes|no)!$/);
  });

  it('refuses unsupported schemas, malformed grammars and unreadable files with one clear line', async () => {
    const bad = join(tmp, 'bad.json');
    writeFileSync(bad, JSON.stringify({ type: 'string', not: { const: 'x' } }));
    let r = await mlxcel(['generate', '--demo', '--prompt', 'x', '--json-schema', bad], { env: cacheEnv });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/JSON Schema at #\/not: keyword "not" is not supported/);
    const g = join(tmp, 'bad.gbnf');
    writeFileSync(g, 'root ::= missing\n');
    r = await mlxcel(['generate', '--demo', '--prompt', 'x', '--grammar', g], { env: cacheEnv });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/rule "missing" is used at line 1, column 10 but never defined/);
    r = await mlxcel(['generate', '--demo', '--prompt', 'x', '--grammar', join(tmp, 'nope.gbnf')], { env: cacheEnv });
    expect(r.stderr).toMatch(/--grammar .*nope\.gbnf does not exist/);
  });
});
