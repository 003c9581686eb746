// lib/index.d.cts, the types of the CommonJS entry, is lib/index.d.ts under the name TypeScript
// reads as CommonJS: the declarations are the same for both entries (index.cjs exports each binding
// by name, and `default`), but a .d.cts may not re-export an ES module's .d.ts, so it is a copy,
// written by every build and by prepack rather than kept in git.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const lib = join(dirname(fileURLToPath(import.meta.url)), '..', 'lib');

export function writeCjsTypes() {
  const header = '// Generated from index.d.ts by scripts/cjs-types.mjs; edit index.d.ts.\n';
  writeFileSync(join(lib, 'index.d.cts'), header + readFileSync(join(lib, 'index.d.ts'), 'utf8'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeCjsTypes();
