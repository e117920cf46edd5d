#!/usr/bin/env bash
# The GPU batch behind bench/results: run from the repository root on the device machine after
# `gn gen out && ninja -C out`. Each part writes its files into DEST and prints a short summary.
# Usage: bench/device.sh DEST PART...   PART: tests | select | shared | solve | bench
# select runs the large-set eval twice in one cache directory and keeps both: the first pays every
# NVRTC compile (cold cache), the second reads the kernels from the disk cache, as a program does
# from its second run on (or after `spx jit --warm`).
set -u
dest=$1; shift
mkdir -p "$dest"
spx=out/spx
shared=${SPX_SHARED_MATRICES:-../shared/matrices}
for part in "$@"; do
  case $part in
  tests)
    tests/run.sh out > "$dest/tests.txt" 2>&1
    tail -1 "$dest/tests.txt" ;;
  select)
    for run in cold warm; do
      $spx select --eval --set large --json-file "$dest/select-large-$run.json" --svg "$dest/select-large-$run.svg" \
        > "$dest/select-large-$run.txt" 2>&1
    done
    sed -n '/^summary/,$p' "$dest/select-large-warm.txt" ;;
  shared)
    # every third shared matrix, byte order of the names (about 40 latency-bound matrices)
    files=$(ls "$shared"/*.mtx.gz | LC_ALL=C sort | awk 'NR % 3 == 1')
    $spx select --eval $files --json-file "$dest/select-shared.json" --svg "$dest/select-shared.svg" \
      > "$dest/select-shared.txt" 2>&1
    sed -n '/^summary/,/^  model/p' "$dest/select-shared.txt" ;;
  solve)
    : > "$dest/solve-large.txt"
    for spec in "poisson7:128 --method cg" "poisson27:100 --method pcg" "elasticity:48 --method pcg" \
                "rep:$shared/bcsstk16.mtx.gz:20000000 --method pcg" "rep:$shared/cage10.mtx.gz:20000000 --method bicgstab" \
                "powerlaw:4000000 --method bicgstab --maxit 300"; do
      echo "== spx solve $spec --tol 1e-8" >> "$dest/solve-large.txt"
      # shellcheck disable=SC2086
      $spx solve $spec --tol 1e-8 >> "$dest/solve-large.txt" 2>&1
    done
    grep -E "^== |spx vs" "$dest/solve-large.txt" ;;
  bench)
    $spx bench --set large --dtype both --reps 15 --json "$dest/bench-large.json" --csv "$dest/bench-large.csv" \
      --svg "$dest/bench-large.svg" > "$dest/bench-large.txt" 2>&1
    tail -4 "$dest/bench-large.txt" ;;
  *) echo "bench/device.sh: unknown part '$part'" >&2; exit 2 ;;
  esac
done
