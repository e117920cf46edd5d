#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The MPS program's checks, as tests/run.sh runs them (host backend, about 30 s in all on 2 cores).
# Usage: examples/mps/check.sh MPS_BINARY CASE
#   hydro        a 0.5 x 0.5 m water column at rest (400 water particles), 0.5 s (5,000 steps): p at
#                depth within 5 % of rho g h (averaged over the last 0.1 s), no particle lost, the PPE
#                matrix symmetric and diagonally dominant
#   front        the dam break at a reduced size: a 0.4 x 0.8 m column (n^2 = 2, 512 particles) in a
#                1.8 m tank, 0.48 s: the surge front within 10 % of Martin & Moyce up to the wall
#   determinism  the thesis's dam break (5,824 particles, OpenMP loops on) for 40 steps, twice with 2
#                threads and once with 1: final positions equal to the bit; and the lagged, fixed-JDS
#                and auto selections on the small column: the same positions too
set -eu
mps=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $2 in
  hydro) # one thread: at 816 particles the loops are serial anyway, and spx's CG gains nothing
    OMP_NUM_THREADS=1 "$mps" --backend host --select csr --tank 0.5,0.6 --water 0,0,0.5,0.5 --time 0.5 --every 0 --check mass,hydro,matrix ;;
  front)
    OMP_NUM_THREADS=1 "$mps" --backend host --select csr --tank 1.8,1.0 --water 0,0,0.4,0.8 --time 0.48 --every 0 --front "$tmp/front.csv" --check mass,front
    test -s "$tmp/front.csv" && ! test -e "$tmp/front.csv.tmp" ;;
  determinism)
    for run in a:2 b:2 c:1; do
      OMP_NUM_THREADS=${run#*:} "$mps" --backend host --layout dambreak --steps 40 --every 0 --quiet --dump "$tmp/${run%:*}"
    done
    cmp "$tmp/a" "$tmp/b" && cmp "$tmp/a" "$tmp/c"
    for sel in lagged jds auto; do
      "$mps" --backend host --tank 0.5,0.6 --water 0,0,0.3,0.4 --steps 300 --every 0 --quiet --select $sel --dump "$tmp/s_$sel"
    done
    cmp "$tmp/s_lagged" "$tmp/s_jds" && cmp "$tmp/s_lagged" "$tmp/s_auto"
    echo "determinism: identical positions (2 threads twice, 1 thread; lagged, jds, auto)" ;;
  *) echo "check.sh: unknown case $2 (hydro, front, determinism)" >&2; exit 2 ;;
esac
