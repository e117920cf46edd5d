#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Matrix Market read speed: spx_mm_read (via `spx info --json`, read time only) against
# scipy.io.mmread on the same file, same machine, warm page cache, best of 3 each.
# Usage: bench/mmread.sh OUTDIR [N_ROWS]   (writes the JSON line of bench/results/mmread/mmread-<host>.json to stdout)
set -euo pipefail
out=${1:-out}; n=${2:-2000000}
tmp=${TMPDIR:-/tmp}/spx_mmread_bench; mkdir -p "$tmp"
f="$tmp/powerlaw_$n.mtx"
[ -f "$f" ] || "$out/spx" gen powerlaw --n "$n" --alpha 2 --min 9 --max 11 --seed 7 -o "$f" >&2
cat "$f" > /dev/null   # warm the page cache for both readers
best() { sort -g | head -1; }
spx_t=$(for i in 1 2 3; do "$out/spx" info --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["read"]["seconds"])'; done | best)
nnz=$("$out/spx" info --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["analysis"]["nnz"])')
sp=$(python3 - "$f" <<'PY' 2>/dev/null || echo "null null"
import sys, time, scipy, scipy.io
ts, tc = [], []
for _ in range(3):
    t = time.perf_counter(); m = scipy.io.mmread(sys.argv[1]); ts.append(time.perf_counter() - t)
    m.tocsr(); tc.append(time.perf_counter() - t)   # CSR, what spx_mm_read returns
    del m
print(min(ts), min(tc), scipy.__version__)
PY
)
read -r sp_t sp_csr sp_v <<<"$sp"
printf '{"file_bytes": %s, "nnz": %s, "threads": %s, "spx_read_to_csr_s": %s, "scipy_mmread_coo_s": %s, "scipy_mmread_tocsr_s": %s, "scipy_version": "%s", "command": "bench/mmread.sh %s %s"}\n' \
  "$(stat -c %s "$f")" "$nnz" "$(nproc)" "$spx_t" "$sp_t" "$sp_csr" "$sp_v" "$out" "$n"
