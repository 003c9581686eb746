// Every kernel variant is compiled with its own ISA flags into its own static library (binding.gyp),
// and cpu.cc picks one at load time. That only works if no code of a wider variant can run before (or
// instead of) that choice. Two ways it could, both checked here on the built archives:
//  - a dynamic initializer (`_GLOBAL__sub_I_*`): it runs while the addon loads, on every CPU — an
//    AVX-512 kernel table built that way killed `require('@mlxcel/core-native')` with SIGILL on
//    AVX2-only machines;
//  - a symbol shared with other translation units (a std::vector<float> member, an inline helper):
//    the linker keeps one copy of it for the whole addon, possibly the AVX-512 one.
// So each archive may define only its own namespace's symbols and its kernel-table accessor.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const release = join(root, 'build', 'Release');
const archives = existsSync(release) ? readdirSync(release).filter((f) => /^kernels_\w+\.a$/.test(f)) : [];
const nmWorks = spawnSync('nm', ['--version']).status === 0;
// Only a from-source build on an ELF platform has these archives (a prebuilt binary does not).
const canCheck = process.platform === 'linux' && archives.length > 0 && nmWorks;

function definedSymbols(archive: string): string[] {
  const r = spawnSync('nm', ['-C', '--defined-only', join(release, archive)], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`nm ${archive} failed: ${r.stderr}`);
  return r.stdout.split('\n').filter((l) => /^[0-9a-f]+ [A-Za-z] /.test(l));
}

describe.skipIf(!canCheck)('kernel variant archives (build/Release/kernels_*.a)', () => {
  it('has one archive per variant this architecture builds', () => {
    const names = archives.map((a) => a.slice('kernels_'.length, -2)).sort();
    if (process.arch === 'x64') expect(names).toEqual(['avx2', 'avx2vnni', 'avx512', 'avx512amx', 'avx512vnni', 'scalar']);
    else expect(names).toContain('scalar');
  });

  for (const archive of archives) {
    const variant = archive.slice('kernels_'.length, -2);
    it(`${variant}: no code runs at load time and no symbol is shared with other files`, () => {
      const syms = definedSymbols(archive);
      expect(syms.length).toBeGreaterThan(100); // the archive really was read
      const initializers = syms.filter((l) => l.includes('_GLOBAL__sub_I'));
      expect(initializers).toEqual([]);
      const external = syms
        .filter((l) => /^[0-9a-f]+ [A-TV-Zuvw] /.test(l)) // global, weak and unique symbols (not local t/d/b/r)
        .map((l) => l.replace(/^[0-9a-f]+ [A-Za-z] /, ''))
        // A name that mentions this variant's namespace (its own functions, or a std template over one of
        // its types such as vec<float>) cannot collide with another file's.
        .filter((name) => !name.includes(`isa_${variant}::`))
        .filter((name) => name !== `mlx::${variant}_kernels()`)
        .filter((name) => name !== 'DW.ref.__gxx_personality_v0'); // the C++ runtime's own, no code
      expect(external).toEqual([]);
    });
  }
});
