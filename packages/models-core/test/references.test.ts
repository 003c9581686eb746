/**
 * The reference lint: every document a comment or doc in the repo points to must be in the repo.
 * It scans source and docs for `*.md` references, `docs/architecture/<note>.md §N` sections and repo
 * paths (`packages/...`, `docs/...`), and fails on one that does not resolve — a file a clone does not
 * have (a spec outside the repo, a renamed note, a section that was never written). Upstream locations
 * (`huggingface/transformers models/phi3/modeling_phi3.py`, URLs) are not checked.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SCANNED = /\.(ts|js|mjs|cjs|h|cc|cpp|c|sh|gyp|md)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', 'build', '.git', '.turbo', '.tools', 'fixtures', '.changeset']);

function walk(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP_DIRS.has(name)) continue;
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) walk(p, out);
    else if (SCANNED.test(name) && !name.startsWith('CHANGELOG')) out.push(p);
  }
  return out;
}

const FILES = [...['packages', 'docs', 'bench', 'scripts'].filter((d) => existsSync(join(ROOT, d))).flatMap((d) => walk(join(ROOT, d), [])), join(ROOT, 'README.md')];

/** The text before a reference on its line marks an upstream location (a repo path or a URL). */
const UPSTREAM = /(https?:\/\/\S*|\b[\w.-]+\/[\w.-]+ `?[\w./-]*|github\.com\S*|huggingface\.co\S*|\b(?:transformers|mlx-lm|mlx-vlm|llama\.cpp|mlx)\b[^\n]{0,40})$/;

interface Ref {
  file: string;
  line: number;
  target: string;
  sections: string[];
}

/** `*.md` references, with the `§N` / `(b)` sections that follow them. */
function mdRefs(file: string, text: string): Ref[] {
  const refs: Ref[] = [];
  const re = /(?<![\w/.-])((?:\.{1,2}\/)?(?:[\w.-]+\/)*[\w-]+\.md)\b((?:,? ?(?:§ ?[0-9][0-9.]*[a-z]?(?:[–-][0-9.]+)?|§ ?\(?[a-h]\)?|\([a-h]\)))*)/g;
  text.split('\n').forEach((lineText, i) => {
    for (const m of lineText.matchAll(re)) {
      const before = lineText.slice(0, m.index);
      if (UPSTREAM.test(before) && !m[1]!.startsWith('docs/architecture/')) continue;
      const sections = [...m[2]!.matchAll(/§ ?([0-9][0-9.]*[a-z]?)(?:[–-]([0-9.]+))?|§ ?\(?([a-h])\)?|\(([a-h])\)/g)].flatMap((s) => {
        if (s[3] || s[4]) return [`(${s[3] ?? s[4]})`];
        const first = s[1]!.replace(/\.$/, '');
        return s[2] ? [first, s[2].replace(/\.$/, '')] : [first];
      });
      refs.push({ file, line: i + 1, target: m[1]!, sections });
    }
  });
  return refs;
}

/**
 * Where a bare or relative reference may live: next to the file, at its package root or the repo root;
 * a note in docs/ may name a sibling note bare. Code must spell `docs/architecture/<note>.md`.
 */
function resolveMd(file: string, target: string): string | null {
  const candidates = [join(dirname(file), target), join(ROOT, target)];
  const pkg = relative(ROOT, file).match(/^packages\/[^/]+/);
  if (pkg) candidates.push(join(ROOT, pkg[0], target));
  if (!target.includes('/') && relative(ROOT, file).startsWith('docs')) candidates.push(join(ROOT, 'docs', 'architecture', target));
  return candidates.find((c) => existsSync(c)) ?? null;
}

function hasSection(doc: string, section: string): boolean {
  const headings = readFileSync(doc, 'utf8').split('\n').filter((l) => l.startsWith('#'));
  if (section.startsWith('(')) return headings.some((h) => h.includes(section));
  return headings.some((h) => new RegExp(`§${section.replace(/\./g, '\\.')}(?![0-9.])|^#+ ${section.replace(/\./g, '\\.')}[. ]`).test(h));
}

/** Repo paths named in docs and comments (`packages/x/src/y.ts`, `docs/architecture/z.md`). */
function pathRefs(file: string, text: string): Ref[] {
  const refs: Ref[] = [];
  text.split('\n').forEach((lineText, i) => {
    for (const m of lineText.matchAll(/(?<![\w/.<-])((?:packages|docs|bench|scripts|fixtures)\/[\w./-]*[\w/])/g)) {
      if (/[<>*{}]/.test(lineText.slice(m.index!, m.index! + m[0].length + 2))) continue; // a pattern, not a path
      // Folders a build or an install makes (git-ignored, so a fresh clone has none): named, never committed.
      if (/(^|\/)(prebuilds|build|build-cross|build-prebuild|dist|node_modules)(\/|$)/.test(m[1]!)) continue;
      // `cd packages/x && node scripts/y.mjs`: a path relative to a package named earlier on the line.
      const base = lineText.slice(0, m.index).match(/packages\/[\w-]+(?=[^/\w-])/g)?.pop();
      refs.push({ file, line: i + 1, target: m[1]!, sections: base ? [`base:${base}`] : [] });
    }
  });
  return refs;
}

const where = (r: Ref) => `${relative(ROOT, r.file)}:${r.line}: ${r.target}${r.sections.length ? ` ${r.sections.map((s) => `§${s}`).join(', ')}` : ''}`;

describe('references in comments and docs resolve inside the repo', () => {
  const texts = FILES.map((f) => ({ f, text: readFileSync(f, 'utf8') }));

  it('scans the whole tree', () => {
    expect(FILES.length).toBeGreaterThan(200);
    expect(texts.some(({ text }) => text.includes('docs/architecture/'))).toBe(true);
  });

  it('no reference to a file outside the repo (shared/specs, shared/research, DESIGN.md)', () => {
    const bad: string[] = [];
    for (const { f, text } of texts)
      text.split('\n').forEach((l, i) => {
        if (/\bshared\/(specs|research|configs|tokenizers)\b|\bDESIGN\.md\b/.test(l) && !f.endsWith('references.test.ts')) bad.push(`${relative(ROOT, f)}:${i + 1}`);
      });
    expect(bad).toEqual([]);
  });

  it('every *.md reference names a file in the repo, and every cited section exists', () => {
    const bad: string[] = [];
    for (const { f, text } of texts)
      for (const r of mdRefs(f, text)) {
        if (f.endsWith('references.test.ts')) continue;
        const doc = resolveMd(f, r.target);
        if (!doc) bad.push(`${where(r)} (no such file)`);
        else for (const s of r.sections) if (!hasSection(doc, s)) bad.push(`${where(r)} (no section §${s} in ${relative(ROOT, doc)})`);
      }
    expect(bad).toEqual([]);
  });

  it('every repo path named in docs and comments exists', () => {
    const bad: string[] = [];
    for (const { f, text } of texts)
      for (const r of pathRefs(f, text)) {
        if (f.endsWith('references.test.ts')) continue;
        const p = r.target.replace(/\.$/, '');
        const pkg = relative(ROOT, f).match(/^packages\/[^/]+/);
        const bases = [ROOT, dirname(f), ...(pkg ? [join(ROOT, pkg[0])] : []), ...r.sections.map((s) => join(ROOT, s.slice('base:'.length)))];
        // A path or a script named without its extension (`bench/audio` for bench/audio.mjs).
        if (!bases.some((b) => ['', '.mjs', '.ts', '.js', '.md'].some((ext) => existsSync(join(b, p + ext))))) bad.push(`${relative(ROOT, r.file)}:${r.line}: ${r.target}`);
      }
    expect(bad).toEqual([]);
  });

  it('the lint itself catches a dangling note, a missing section and an outside path', () => {
    const fake = join(ROOT, 'packages', 'models-core', 'src', 'x.ts');
    const refs = mdRefs(fake, ' * see gemma3n.md §1 and docs/architecture/phi3.md §4.4, §99 and docs/architecture/formats.md (b)');
    expect(refs.map((r) => r.target)).toEqual(['gemma3n.md', 'docs/architecture/phi3.md', 'docs/architecture/formats.md']);
    expect(resolveMd(fake, 'gemma3n.md')).toBeNull(); // code must say docs/architecture/gemma3n.md
    const phi3 = resolveMd(fake, 'docs/architecture/phi3.md')!;
    expect(refs[1]!.sections).toEqual(['4.4', '99']);
    expect(hasSection(phi3, '4.4')).toBe(true);
    expect(hasSection(phi3, '99')).toBe(false);
    expect(refs[2]!.sections).toEqual(['(b)']);
    expect(hasSection(resolveMd(fake, 'docs/architecture/formats.md')!, '(b)')).toBe(true);
    // An upstream location is not a repo reference.
    expect(mdRefs(fake, ' * huggingface/transformers docs/source/en/model_doc/phi3.md')).toEqual([]);
  });
});
