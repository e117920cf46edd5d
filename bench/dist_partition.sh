#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The halo a graph partition saves (spx/dist.h, issue 35): for every square shared matrix and 2, 4
# and 8 ranks, the halo bytes per SpMV summed over the ranks (each rank's send_entries x 8 bytes:
# what one distributed SpMV sends) with the contiguous rows (balanced by nonzeros + rows) and with
# METIS's partition (--partition metis), from `spx solve ... --json` under mpirun on the host backend
# (one CG iteration: the partition, not the solve, is measured). Needs spx built with MPI and METIS.
# Usage: bench/dist_partition.sh OUTDIR [MATRIX_DIR]   (the table on stdout; the bench/results/dist/
#   partition.txt command). Env: SPX_BENCH_RANKS (default "2 4 8").
set -euo pipefail
out=${1:-out}
dir=${2:-../shared/matrices}
ranks=${SPX_BENCH_RANKS:-2 4 8}
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
export OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none SPX_QUIET=1
# one line per run: matrix ranks partition rows halo_bytes_total
halo() { # $1 = matrix file, $2 = ranks, $3 = partition
  mpirun -np "$2" --oversubscribe "${root[@]}" "$out/spx" solve "$1" --host --strategy model --maxit 1 \
    --partition "$3" --json </dev/null 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    if line.startswith("{"):
        j = json.loads(line); print(j["rows"], j["halo_bytes_total"]); break
else:
    print("- -")' || true
}
tail -n +2 "$dir/MANIFEST.tsv" | while IFS=$'\t' read -r name rows cols _; do
  [ "$rows" = "$cols" ] || continue
  for p in $ranks; do
    for part in contiguous metis; do
      echo "$name $p $part $(halo "$dir/$name.mtx.gz" "$p" "$part")"
    done
  done
done | python3 -c '
import sys, math
ranks = sys.argv[1].split()
runs = {}
for line in sys.stdin:
    name, p, part, n, h = line.split()
    runs.setdefault(name, {"rows": n})[(p, part)] = None if h == "-" else int(float(h))
print("# " + sys.argv[2])
print("# halo bytes per SpMV, all ranks summed (send_entries x 8), contiguous rows vs METIS k-way (objective:")
print("# communication volume); metis/contig < 1: METIS sends less. Host backend; one CG iteration per run.")
head = "%-16s %8s" % ("matrix", "rows")
for p in ranks: head += " | %10s %10s %6s" % (p + " contig", "metis", "ratio")
print(head)
stats = {p: [] for p in ranks}
for name, r in runs.items():
    row = "%-16s %8s" % (name, r["rows"])
    for p in ranks:
        c, m = r.get((p, "contiguous")), r.get((p, "metis"))
        if c is None or m is None: row += " | %10s %10s %6s" % ("-", "-", "-"); continue
        ratio = m / c if c else (1.0 if m == 0 else float("inf"))
        stats[p].append((c, m, ratio))
        row += " | %10d %10d %6.2f" % (c, m, ratio)
    print(row)
print()
for p in ranks:
    s = stats[p]
    if not s: continue
    both = [x for x in s if x[0] > 0 and x[1] > 0]
    gm = math.exp(sum(math.log(x[2]) for x in both) / len(both)) if both else float("nan")
    tc, tm = sum(x[0] for x in s), sum(x[1] for x in s)
    print("%s ranks: %d matrices; METIS sends less on %d, the same on %d, more on %d; geometric mean ratio %.3f "
          "(matrices with a halo both ways); all matrices together %d -> %d bytes (%.1f%% saved)" % (
          p, len(s), sum(x[1] < x[0] for x in s), sum(x[1] == x[0] for x in s), sum(x[1] > x[0] for x in s), gm,
          tc, tm, 100.0 * (1 - tm / tc) if tc else 0.0))
' "$ranks" "bench/dist_partition.sh $out $dir   (ranks: $ranks)"
