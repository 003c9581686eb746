#!/usr/bin/env bash
# Builds the standalone kernel conformance driver (test/cross/conformance.cc) with the kernel variants
# and runs it, without Node or node-gyp:
#
#   scripts/check-cross.sh native [ARGS...]   every variant binding.gyp builds for this host's arch
#   scripts/check-cross.sh arm64  [ARGS...]   the arm64 variants, cross-compiled (aarch64-linux-gnu-g++)
#                                             and run under qemu-aarch64 (user mode)
#   scripts/check-cross.sh [all]              native, then arm64
#
# ARGS go to the driver (e.g. `matmul attention` to run only those groups, `--verbose`). Compiler flags
# and variant defines are read from binding.gyp (target_defaults + each kernels_* target, and the
# MLX_HAVE_*_VARIANT defines of mlxcel_core for the arch), so the objects are built as the addon builds
# them. An src/isa/isa_neon_<ext>.cc that binding.gyp does not list yet is still compiled for arm64, with
# -march=armv8.2-a+<ext> and -DMLX_HAVE_NEON_<EXT>_VARIANT=1.
# Objects go to build-cross/<target>-<arch>/ and are rebuilt only when a source, header or flag changed.
# Environment: JOBS (parallel compiles, default 2), CXX (native compiler), CROSS_CXX (default
# aarch64-linux-gnu-g++), QEMU (default qemu-aarch64), QEMU_LD_PREFIX (default /usr/aarch64-linux-gnu),
# MLXCEL_THREADS (kernel threads in the driver, default 2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"  # packages/core-native
jobs="${JOBS:-2}"

die() { echo "check-cross: $*" >&2; exit 2; }

need() {  # need COMMAND "how to get it"
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found. $2"
}

# Prints the build plan for a gyp target_arch (x64 / arm64) from binding.gyp:
#   BASE <flags...>            target_defaults cflags_cc (minus cflags_cc!)
#   DEFS <defines...>          mlxcel_core's defines for this arch (which variants cpu.cc references)
#   SRC <file> <flags...>      one kernel variant translation unit and its own flags / defines
gyp_plan() {
  python3 - "$root/binding.gyp" "$1" <<'PY'
import ast, sys

path, arch = sys.argv[1], sys.argv[2]

def strip_comments(text):
    out = []
    for line in text.splitlines():
        res, quote = [], None
        for ch in line:
            if quote:
                res.append(ch)
                if ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
                res.append(ch)
            elif ch == '#':
                break
            else:
                res.append(ch)
        out.append(''.join(res))
    return '\n'.join(out)

gyp = ast.literal_eval(strip_comments(open(path).read()))
variables = {'target_arch': arch, 'OS': 'linux'}

def resolved(d):
    """d with its 'conditions' applied for this arch (gyp merges lists by appending)."""
    d = dict(d)
    for cond in d.pop('conditions', []):
        branches = cond[1:]
        taken = branches[0] if eval(cond[0], {}, variables) else (branches[1] if len(branches) > 1 else None)
        if taken:
            for k, v in resolved(taken).items():
                d[k] = d.get(k, []) + v if isinstance(v, list) else v
    return d

top = resolved(gyp)
defaults = top.get('target_defaults', {})
base = [f for f in defaults.get('cflags_cc', []) if f not in defaults.get('cflags_cc!', [])]
print('BASE', *base)
targets = [resolved(t) for t in top.get('targets', [])]
for t in targets:
    if t.get('target_name') == 'mlxcel_core':
        print('DEFS', *t.get('defines', []))
for t in targets:
    for src in t.get('sources', []):
        if src.startswith('src/isa/isa_'):
            print('SRC', src, *t.get('cflags_cc', []), *('-D' + d for d in t.get('defines', [])))
PY
}

# compile SRC OBJ FLAGS...: skipped when OBJ is newer than SRC and every header it includes, and was
# built with the same command.
compile() {
  local src="$1" obj="$2"
  shift 2
  local cmd="$CXX_BIN $* -c $src -o $obj"
  if [[ -f "$obj" && -f "$obj.cmd" && -f "$obj.d" && "$(cat "$obj.cmd")" == "$cmd" ]]; then
    local stale=0 dep
    for dep in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$obj.d"); do
      if [[ ! -e "$dep" || "$dep" -nt "$obj" ]]; then stale=1; break; fi
    done
    [[ $stale == 0 ]] && return 0
  fi
  echo "  CXX $(basename "$src")  $*"
  rm -f "$obj" "$obj.cmd"
  "$CXX_BIN" "$@" -MMD -MF "$obj.d" -c "$src" -o "$obj"
  echo "$cmd" >"$obj.cmd"  # written only on success: the caller checks for it
}

run_target() {  # run_target native|arm64 [driver args...]
  local target="$1"
  shift
  local arch gyp_arch runner=()
  case "$target" in
    native)
      case "$(uname -m)" in
        x86_64 | amd64) arch=x86_64 gyp_arch=x64 ;;
        aarch64 | arm64) arch=aarch64 gyp_arch=arm64 ;;
        *) die "native: unsupported host architecture $(uname -m)" ;;
      esac
      CXX_BIN="${CXX:-g++}"
      need "$CXX_BIN" "Install a C++17 compiler (Debian: apt-get install g++)."
      ;;
    arm64)
      arch=aarch64 gyp_arch=arm64
      CXX_BIN="${CROSS_CXX:-aarch64-linux-gnu-g++}"
      local qemu="${QEMU:-qemu-aarch64}" sysroot="${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}"
      need "$CXX_BIN" "Install the arm64 cross compiler (Debian/Ubuntu: apt-get install g++-aarch64-linux-gnu), or set CROSS_CXX."
      if [[ "$(uname -m)" != aarch64 && "$(uname -m)" != arm64 ]]; then
        need "$qemu" "Install the user-mode emulator (Debian/Ubuntu: apt-get install qemu-user, or qemu-user-static), or set QEMU."
        [[ -d "$sysroot" ]] || die "no arm64 runtime libraries in $sysroot (Debian/Ubuntu: apt-get install g++-aarch64-linux-gnu, which brings libc6-dev-arm64-cross), or set QEMU_LD_PREFIX."
        runner=("$qemu" -cpu max -L "$sysroot")
      fi
      ;;
    *) die "unknown target '$target' (use native, arm64 or all)" ;;
  esac
  need python3 "python3 reads binding.gyp (node-gyp needs it too)."

  local build="$root/build-cross/$target-$arch"
  mkdir -p "$build"
  local base=() defs=() srcs=() line
  declare -A src_flags=()
  while IFS= read -r line; do
    read -r -a words <<<"$line"
    case "${words[0]}" in
      BASE) base=("${words[@]:1}") ;;
      DEFS) for d in "${words[@]:1}"; do defs+=("-D$d"); done ;;
      SRC) srcs+=("${words[1]}"); src_flags["${words[1]}"]="${words[*]:2}" ;;
    esac
  done < <(gyp_plan "$gyp_arch")
  [[ ${#base[@]} -gt 0 ]] || die "could not read the compiler flags from binding.gyp"

  # Variant files on disk that binding.gyp does not list (yet): arm64 extensions get their -march.
  local f rel
  for f in "$root"/src/isa/isa_*.cc; do
    rel="src/isa/$(basename "$f")"
    [[ -n "${src_flags[$rel]+x}" ]] && continue
    local name ext
    name="$(basename "$f" .cc)"
    if [[ $gyp_arch == arm64 && $name == isa_neon_* ]]; then
      ext="${name#isa_neon_}"
      local def="MLX_HAVE_NEON_${ext^^}_VARIANT"
      srcs+=("$rel")
      src_flags["$rel"]="-march=armv8.2-a+$ext"
      defs+=("-D$def=1")
      grep -q "$def" "$root/src/cpu.cc" ||
        echo "check-cross: warning: $rel is compiled, but src/cpu.cc does not mention $def, so the driver will not see it" >&2
    elif [[ ($gyp_arch == arm64 && $name == isa_neon*) || ($gyp_arch == x64 && $name != isa_neon*) ]]; then
      echo "check-cross: warning: $rel is not in binding.gyp for $gyp_arch; skipped (its flags are unknown)" >&2
    fi
  done

  echo "== $target ($arch): $CXX_BIN, ${#srcs[@]} variant files, build dir ${build#"$root/"}"
  local t0=$SECONDS objs=() src obj
  local common=("${base[@]}" -pthread -I"$root/src" "${defs[@]}")
  queue() {  # runs compile in the background, at most $jobs at a time
    while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
    compile "$@" &
  }
  for src in "${srcs[@]}"; do
    obj="$build/$(basename "$src" .cc).o"
    objs+=("$obj")
    # shellcheck disable=SC2086  # the per-target flags are words
    queue "$root/$src" "$obj" "${common[@]}" ${src_flags[$src]}
  done
  for src in src/cpu.cc src/threadpool.cc src/cpu_count.cc; do
    obj="$build/$(basename "$src" .cc).o"
    objs+=("$obj")
    queue "$root/$src" "$obj" "${common[@]}"
  done
  obj="$build/conformance.o"
  objs+=("$obj")
  queue "$root/test/cross/conformance.cc" "$obj" -std=c++17 -O2 -Wall -Wextra -pthread -I"$root/src" "${defs[@]}"
  wait
  for obj in "${objs[@]}"; do
    [[ -f "$obj.cmd" ]] || die "compiling $(basename "$obj" .o) failed"
  done
  "$CXX_BIN" -pthread "${objs[@]}" -o "$build/conformance"
  echo "   built in $((SECONDS - t0)) s"

  local t1=$SECONDS rc=0
  MLXCEL_THREADS="${MLXCEL_THREADS:-2}" "${runner[@]}" "$build/conformance" "$@" || rc=$?
  echo "== $target: exit $rc, ran in $((SECONDS - t1)) s${runner:+ (under ${runner[0]})}"
  return $rc
}

mode="${1:-all}"
[[ $# -gt 0 ]] && shift
case "$mode" in
  native | arm64) run_target "$mode" "$@" ;;
  all)
    rc=0
    run_target native "$@" || rc=1
    run_target arm64 "$@" || rc=1
    exit $rc
    ;;
  -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" ;;
  *) die "unknown mode '$mode' (use native, arm64 or all)" ;;
esac
