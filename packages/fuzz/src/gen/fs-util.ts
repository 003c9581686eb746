/** Scratch folders for generated cases: fixture files linked, the mutated file written. */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
let root: string | null = null;
let n = 0;

export function scratchRoot(): string {
  return (root ??= mkdtempSync(join(tmpdir(), 'mlxcel-fuzz-')));
}

/** A new folder holding links to every file of `fixture` except those in `replace`, which are written. */
export function variant(fixture: string, replace: Record<string, string | Uint8Array | 'dir' | 'fifo' | null> = {}): string {
  const src = join(FIXTURES, fixture);
  const dir = join(scratchRoot(), `${fixture.replace(/\//g, "_")}-${n++}`);
  mkdirSync(dir);
  for (const f of readdirSync(src)) if (!(f in replace)) symlinkSync(join(src, f), join(dir, f));
  for (const [f, body] of Object.entries(replace)) {
    const p = join(dir, f);
    if (body === null) continue;  // removed
    if (body === 'dir') mkdirSync(p);
    else if (body === 'fifo') execFileSync('mkfifo', [p]);
    else writeFileSync(p, body);
  }
  return dir;
}

export function copyOf(fixture: string, file: string, to: string): void {
  copyFileSync(join(FIXTURES, fixture, file), to);
}
