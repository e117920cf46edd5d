#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The MPI library's compile and link flags as a GN scope, for //build/config:mpi (exec_script
# "scope"): cflags, lib_dirs, libs, ldflags. Asked of the compiler wrapper first (Open MPI's
# `mpicc --showme:compile/link`, MPICH's `mpicc -compile_info/-link_info`), else of pkg-config
# (ompi-c, mpich); exits 1 when none answers. `--probe` prints true or false instead (bootstrap.sh).
# MPICC names another wrapper.
mpicc=${MPICC:-mpicc}
cflags= link=
if command -v "$mpicc" >/dev/null 2>&1; then
  if cflags=$("$mpicc" --showme:compile 2>/dev/null) && link=$("$mpicc" --showme:link 2>/dev/null); then :
  elif cflags=$("$mpicc" -compile_info 2>/dev/null) && link=$("$mpicc" -link_info 2>/dev/null); then
    cflags=${cflags#* } link=${link#* }   # MPICH prints the compiler first
  else cflags= link=; fi
fi
if [ -z "$cflags$link" ]; then
  for pc in ompi-c mpich; do
    if pkg-config --exists "$pc" 2>/dev/null; then
      cflags=$(pkg-config --cflags "$pc") link=$(pkg-config --libs "$pc"); break
    fi
  done
fi
if [ "${1:-}" = --probe ]; then
  if [ -n "$cflags$link" ]; then echo true; else echo false; fi
  exit 0
fi
[ -n "$cflags$link" ] || { echo "mpi_flags.sh: no mpicc and no pkg-config file for MPI" >&2; exit 1; }
list() { # $1 = GN variable, rest = words
  v=$1; shift
  printf '%s = [' "$v"
  for w in "$@"; do printf ' "%s",' "$w"; done
  printf ' ]\n'
}
cf= ld= dirs= libs=
for w in $cflags; do
  case "$w" in
    -I*) cf="$cf -isystem ${w#-I}" ;;   # a system header: the -Wpedantic -Werror builds skip its warnings
    -D*|-pthread) cf="$cf $w" ;;
  esac
done
for w in $link; do
  case "$w" in
    -L*) dirs="$dirs ${w#-L}" ;;
    -l*) libs="$libs ${w#-l}" ;;
    -Wl,*|-pthread) ld="$ld $w" ;;
  esac
done
# shellcheck disable=SC2086
{ list cflags $cf; list lib_dirs $dirs; list libs $libs; list ldflags $ld; }
