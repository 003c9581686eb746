#!/bin/sh
# One-time set-up shared by `npm run demo` and `npm test`: pnpm, dependencies, native build, TS builds.
# Needs only Node 20, python3 and a C++ toolchain. Safe to re-run: every step is incremental.
set -e
cd "$(dirname "$0")/.."
if ! command -v pnpm >/dev/null 2>&1 || ! pnpm --version 2>/dev/null | grep -q '^10\.'; then
  echo "[mlxcel] installing pnpm 10 (npm i -g pnpm@10)" >&2
  npm install -g pnpm@10.34.9 >/dev/null 2>&1 || {
    # No write access to the global prefix: install into a local prefix instead.
    npm install --prefix "$PWD/.tools" pnpm@10.34.9 >/dev/null
    PATH="$PWD/.tools/node_modules/.bin:$PATH"; export PATH
  }
fi
echo "[mlxcel] pnpm install" >&2
pnpm install --frozen-lockfile=false --reporter=append-only >&2
echo "[mlxcel] building packages (native kernels + TypeScript)" >&2
pnpm exec turbo run build --output-logs=errors-only >&2
