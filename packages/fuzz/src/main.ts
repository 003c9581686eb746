/**
 * mlxcel fuzz runner.
 *   node dist/main.js --ci     the CI form (`npm test` of this package): every generated case except the
 *                              slow CLI ones, two workers; budget 3 minutes on a 2-core machine
 *   node dist/main.js --all    the long form (`pnpm fuzz --all`): also pairwise native mutations,
 *                              key-deletion tokenizer mutations and every CLI case
 * Options: --class NAME (only that class), --parallel N, --list (print case ids), --verbose (every outcome).
 * Exit code 1 when any case crashed, hung, ran out of memory, was silently wrong or gave an unclear error.
 */
import { rmSync } from 'node:fs';
import { audioCliCases } from './gen/audio-cli.js';
import { scratchRoot } from './gen/fs-util.js';
import { modelCases } from './gen/models.js';
import { nativeCases } from './gen/native.js';
import { textCases } from './gen/text.js';
import { DEFAULT_LIMITS, runAll, type Outcome } from './runner.js';
import type { FuzzCase, Verdict } from './types.js';

const argv = process.argv.slice(2);
const full = argv.includes('--all');
const opt = (name: string) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const only = opt('--class');
const parallel = Number(opt('--parallel') ?? 2);

function generate(): FuzzCase[] {
  const all = [...nativeCases(full), ...modelCases(), ...textCases(full), ...audioCliCases(full)];
  return only ? all.filter((c) => c.cls === only) : all;
}

const VERDICTS: Verdict[] = ['pass', 'crash', 'hang', 'oom', 'silently-wrong', 'unclear-error'];

async function main(): Promise<number> {
  const t0 = Date.now();
  const cases = generate();
  if (argv.includes('--list')) {
    for (const c of cases) process.stdout.write(`${c.id}\n`);
    return 0;
  }
  process.stdout.write(`mlxcel fuzz (${full ? 'long' : 'CI'} form): ${cases.length} cases, ${parallel} worker(s)\n`);
  const bad: Outcome[] = [];
  const outcomes = await runAll(cases, parallel, DEFAULT_LIMITS, (o) => {
    if (o.verdict !== 'pass') bad.push(o);
    if (argv.includes('--verbose') || o.verdict !== 'pass') process.stdout.write(`${o.verdict.padEnd(15)} ${o.c.id} (${o.ms} ms): ${o.detail.slice(0, 400)}\n`);
  });
  const byClass = new Map<string, Record<Verdict, number>>();
  for (const o of outcomes) {
    const row = byClass.get(o.c.cls) ?? Object.fromEntries(VERDICTS.map((v) => [v, 0])) as Record<Verdict, number>;
    row[o.verdict]++;
    byClass.set(o.c.cls, row);
  }
  process.stdout.write(`\n${'class'.padEnd(12)}${VERDICTS.map((v) => v.padStart(15)).join('')}\n`);
  const total = Object.fromEntries(VERDICTS.map((v) => [v, 0])) as Record<Verdict, number>;
  for (const [cls, row] of [...byClass].sort()) {
    process.stdout.write(`${cls.padEnd(12)}${VERDICTS.map((v) => String(row[v]).padStart(15)).join('')}\n`);
    for (const v of VERDICTS) total[v] += row[v];
  }
  process.stdout.write(`${'total'.padEnd(12)}${VERDICTS.map((v) => String(total[v]).padStart(15)).join('')}\n`);
  const slowest = [...outcomes].sort((a, b) => b.ms - a.ms).slice(0, 3).map((o) => `${o.c.id} ${o.ms} ms`).join(', ');
  process.stdout.write(`\n${outcomes.length} cases in ${((Date.now() - t0) / 1000).toFixed(1)} s (slowest: ${slowest})\n`);
  rmSync(scratchRoot(), { recursive: true, force: true });
  return bad.length === 0 ? 0 : 1;
}

main().then((code) => process.exit(code), (e) => {
  process.stderr.write(`mlxcel fuzz: ${(e as Error).stack ?? e}\n`);
  process.exit(2);
});
