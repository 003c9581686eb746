// `prepack` of @mlxcel/core-native (runs before `pnpm pack` and `pnpm publish`): writes the CommonJS
// types and lists the prebuilt binaries the tarball will carry. The release workflow sets
// MLXCEL_REQUIRE_PREBUILDS to the platforms it built (`linux-x64.glibc,darwin-arm64,...`) so that a
// publish missing one of them fails here instead of shipping a package that compiles on install.
import { existsSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeCjsTypes } from './cjs-types.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const prebuilds = join(root, 'prebuilds');

writeCjsTypes();

/** ['linux-x64.glibc', 'darwin-arm64', ...]: one entry per binary in prebuilds/. */
function shipped() {
  if (!existsSync(prebuilds)) return [];
  return readdirSync(prebuilds).flatMap((dir) =>
    readdirSync(join(prebuilds, dir))
      .filter((f) => f.endsWith('.node'))
      .map((f) => {
        const libc = /\.(glibc|musl)\.node$/.exec(f)?.[1];
        return libc ? `${dir}.${libc}` : dir;
      }),
  );
}

const have = shipped();
console.error(`[prepack @mlxcel/core-native] prebuilt binaries: ${have.length ? have.join(', ') : 'none (every install will build from source)'}`);
const required = (process.env.MLXCEL_REQUIRE_PREBUILDS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
const missing = required.filter((r) => !have.includes(r));
if (missing.length) {
  console.error(`[prepack @mlxcel/core-native] MLXCEL_REQUIRE_PREBUILDS names ${missing.join(', ')}, which prebuilds/ lacks`);
  process.exit(1);
}
