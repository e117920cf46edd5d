#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs spx under a prefix:
#   PREFIX/include/spx/**                    the headers (the whole library: spx is header-only)
#   PREFIX/bin/spx                           the spx command, from the GN out dir $SPX_OUT
#   PREFIX/lib/pkgconfig/spx.pc              for pkg-config
#   PREFIX/lib/cmake/spx/spxConfig.cmake     for CMake: find_package(spx), spx::spx,
#   PREFIX/lib/cmake/spx/spxConfigVersion.cmake    spx_add_implementation(target)
#   PREFIX/share/doc/spx/LICENSE
#
# Usage: build/install.sh [--no-bin] PREFIX
#   Env: SPX_OUT   the GN out dir holding the built `spx` command (default: out). Build it first:
#                  build/bootstrap.sh && gn gen out && ninja -C out spx
#   --no-bin       headers, pkg-config and CMake files only (no GN build needed at all)
#
# No root and no Debian needed: any prefix you can write works (e.g. build/install.sh ~/.local,
# then PKG_CONFIG_PATH=~/.local/lib/pkgconfig and CMAKE_PREFIX_PATH=~/.local). The headers need
# neither GN nor an install: one C file of your program defines SPX_IMPLEMENTATION before
# including <spx/spx.h> (say spx_impl.c), and
#     cc app.c spx_impl.c -I<prefix>/include -ldl -lz -lpthread -lm      (-fopenmp: optional)
# builds it. CUDA is opened at run time (dlopen): nothing of CUDA is needed to build or install.
#
# Idempotent: files already identical are left alone (mtimes kept); headers a previous install put
# in PREFIX/include/spx that spx no longer has are removed. Every file is written to a temporary
# name in its directory and renamed into place, so an interrupted install never leaves a
# half-written file. Exits non-zero with a message on any failure (missing out dir or command,
# unwritable prefix, ...).
set -euo pipefail
here=$PWD                      # PREFIX and $SPX_OUT, when relative, are relative to this
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."

die() { echo "install.sh: $*" >&2; exit 1; }
usage() { awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$self" >&2; exit 2; }

with_bin=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-bin) with_bin=0; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "install.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] && [ -n "$1" ] || usage
prefix=$1
case "$prefix" in /*) ;; *) prefix=$here/$prefix ;; esac
# pkg-config cannot express these in a path (and a prefix with a newline is surely a mistake).
case "$prefix" in
  *[[:space:]\"\'\\\$\`]*) die "prefix '$prefix' has whitespace, a quote, a backslash, \$ or \`: pkg-config cannot express it; choose another" ;;
esac

out=${SPX_OUT:-$PWD/out}
case "$out" in /*) ;; *) out=$here/$out ;; esac
bin=
if [ "$with_bin" = 1 ]; then
  [ -d "$out" ] || die "out dir '$out' (\$SPX_OUT) does not exist: build the spx command first (build/bootstrap.sh && gn gen $out && ninja -C $out spx), or pass --no-bin"
  bin=$out/spx
  [ -f "$bin" ] && [ -x "$bin" ] || die "'$bin' is missing: build it first (ninja -C $out spx), or pass --no-bin"
fi

version=$(sed -n 's/^#define SPX_VERSION_STRING "\([^"]*\)".*/\1/p' include/spx/version.h)
[ -n "$version" ] || die "cannot read SPX_VERSION_STRING from include/spx/version.h"

mkdir -p -- "$prefix" 2>/dev/null || die "cannot create the prefix '$prefix'"
prefix=$(cd -- "$prefix" && pwd -P) || die "cannot enter the prefix"
[ -w "$prefix" ] || die "the prefix '$prefix' is not writable (choose one you own, e.g. ~/.local)"

tmp=
cleanup() { if [ -n "$tmp" ]; then rm -f -- "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# put SRC DEST MODE: DEST becomes a copy of SRC (its directory made), through a temp + rename.
put() {
  local dir
  dir=$(dirname -- "$2")
  mkdir -p -- "$dir" 2>/dev/null || die "cannot create $dir"
  if [ -f "$2" ] && [ ! -L "$2" ] && cmp -s -- "$1" "$2"; then
    chmod "$3" -- "$2" || die "cannot chmod $2"
    return 0
  fi
  tmp=$(mktemp "$dir/.spx-install.XXXXXX" 2>/dev/null) || die "cannot write in $dir (not writable?)"
  cp -- "$1" "$tmp" || die "cannot copy $1 to $dir"
  chmod "$3" -- "$tmp" || die "cannot chmod $tmp"
  mv -f -- "$tmp" "$2" || die "cannot rename $tmp to $2"
  tmp=
  echo "installed $2"
}

# subst IN OUT: IN with @PREFIX@ and @VERSION@ replaced (literally: no regex or & surprises).
subst() {
  PREFIX="$prefix" VERSION="$version" awk '
    function rep(s, k, v,   i, r) {
      r = ""
      while ((i = index(s, k)) > 0) { r = r substr(s, 1, i - 1) v; s = substr(s, i + length(k)) }
      return r s
    }
    { print rep(rep($0, "@PREFIX@", ENVIRON["PREFIX"]), "@VERSION@", ENVIRON["VERSION"]) }' "$1" >"$2" \
    || die "cannot write $2"
  if grep -q '@[A-Z_]*@' "$2"; then die "$1: a @VARIABLE@ was left unreplaced"; fi
}

# Every directory written, made and probed before anything is installed: an unwritable part of
# the prefix fails here, not halfway through.
dirs=("$prefix/include/spx" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/spx" "$prefix/share/doc/spx")
[ -z "$bin" ] || dirs+=("$prefix/bin")
for d in "${dirs[@]}"; do
  mkdir -p -- "$d" 2>/dev/null || die "cannot create $d (is the prefix writable?)"
  tmp=$(mktemp "$d/.spx-install.XXXXXX" 2>/dev/null) || die "cannot write in $d (is the prefix writable?)"
  rm -f -- "$tmp"; tmp=
done

stage=$(mktemp -d) || die "cannot make a temporary directory"
trap 'cleanup; rm -rf -- "$stage"' EXIT

# The headers: every file under include/spx (internal/ and templates_gen.h included).
[ -f include/spx/internal/templates_gen.h ] || die "include/spx/internal/templates_gen.h is missing"
headers=()
while IFS= read -r -d '' f; do headers+=("${f#include/spx/}"); done \
  < <(find include/spx -type f -name '*.h' -print0 | LC_ALL=C sort -z)
[ ${#headers[@]} -gt 0 ] || die "no headers under include/spx"
for h in "${headers[@]}"; do put "include/spx/$h" "$prefix/include/spx/$h" 644; done
# Headers an older spx installed and this one does not have.
if [ -d "$prefix/include/spx" ]; then
  while IFS= read -r -d '' f; do
    rel=${f#"$prefix/include/spx/"}
    [ -f "include/spx/$rel" ] && continue
    rm -f -- "$f" || die "cannot remove the stale $f"
    echo "removed $f"
  done < <(find "$prefix/include/spx" -type f -name '*.h' -print0)
  find "$prefix/include/spx" -mindepth 1 -type d -empty -delete 2>/dev/null || true
fi

[ -z "$bin" ] || put "$bin" "$prefix/bin/spx" 755

subst build/spx.pc.in "$stage/spx.pc"
subst build/spxConfig.cmake.in "$stage/spxConfig.cmake"
subst build/spxConfigVersion.cmake.in "$stage/spxConfigVersion.cmake"
put "$stage/spx.pc" "$prefix/lib/pkgconfig/spx.pc" 644
put "$stage/spxConfig.cmake" "$prefix/lib/cmake/spx/spxConfig.cmake" 644
put "$stage/spxConfigVersion.cmake" "$prefix/lib/cmake/spx/spxConfigVersion.cmake" 644
put LICENSE "$prefix/share/doc/spx/LICENSE" 644

echo "spx $version installed in $prefix"
echo "  pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs spx"
echo "  CMake:      cmake -DCMAKE_PREFIX_PATH=$prefix ...  then find_package(spx) and spx::spx"
