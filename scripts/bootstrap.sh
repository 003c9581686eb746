#!/bin/sh
# Set-up shared by `npm run demo` and `npm test`, then runs the requested job.
# Needs only Node 20, python3 and a C++ toolchain; every step is incremental, so re-running is cheap.
#   sh scripts/bootstrap.sh demo [generate flags...]   install, build, run the demo generation
#   sh scripts/bootstrap.sh test                       install, build, run the whole test suite, then
#                                                      the packed-install test (scripts/packed-install.mjs)
set -e
cd "$(dirname "$0")/.."
job="${1:-none}"
[ $# -gt 0 ] && shift
if ! pnpm --version 2>/dev/null | grep -q '^10\.'; then
  # No pnpm 10 on PATH: install it inside the repo (.tools/, git-ignored) rather than globally, so the
  # set-up needs no write access outside the clone and works whatever npm's global prefix is.
  echo "[mlxcel] installing pnpm 10 into .tools/" >&2
  npm install --no-save --no-audit --no-fund --prefix "$PWD/.tools" pnpm@10.34.9 >&2
  PATH="$PWD/.tools/node_modules/.bin:$PATH"
  export PATH
fi
echo "[mlxcel] installing dependencies" >&2
pnpm install --frozen-lockfile --reporter=append-only >&2
echo "[mlxcel] building (native kernels + TypeScript)" >&2
pnpm exec turbo run build --output-logs=errors-only >&2
case "$job" in
  demo) exec node packages/cli/dist/bin.js generate --demo "$@" ;;
  test)
    pnpm exec turbo run test --concurrency=1 --output-logs=full
    # What users install: every package packed, installed from the tarballs with npm and pnpm, used.
    exec node scripts/packed-install.mjs ;;
  none) ;;
  *) echo "unknown job $job (demo | test)" >&2; exit 2 ;;
esac
