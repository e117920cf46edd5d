#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The GPU batch behind bench/results and tests/results: run from the repository root on the device
# machine after `gn gen out && ninja -C out`. Each part writes its files into DEST and prints a short
# summary. Where they are kept (bench/results/README.md, tests/results/README.md): bench, buckets ->
# bench/results/bench/; select, shared, replicated, tiered, beside, trees -> bench/results/select/; solve,
# solve-defer, trace -> bench/results/solve/; stencil-ab, fig11, stencil-trace, stencil-2800, tb-pf
# -> bench/results/stencil/; upload -> bench/results/upload/; tests, memcheck -> tests/results/
# (amg, amg-paper and dist-stencil have no stored run yet).
# Usage: bench/device.sh DEST PART...   PART: tests | tests-c | tests-rest | select | shared | replicated | tiered | beside | trees | buckets | solve | solve-defer | upload | bench | stencil-ab |
#                                       memcheck | trace | fig11 | stencil-trace | stencil-2800 | tb-pf | amg |
#                                       amg-paper | dist | dist-stencil
# select runs the large-set eval twice in one cache directory and keeps both: the first pays every
# NVRTC compile (cold cache), the second reads the kernels from the disk cache, as a program does
# from its second run on (or after `spx jit --warm`).
set -u
dest=$1; shift
mkdir -p "$dest"
spx=out/spx
shared=${SPX_SHARED_MATRICES:-../shared/matrices}
# The calibration file the tuner priced with (its newest version, as spx finds the cache), beside
# the evals as DEVICE.PART.json: bench/model_replay.py sets the model against their times with it,
# on any machine. Per part: a cache that did not outlive the last part was calibrated again.
keep_calibration() {
  cache=${SPX_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spx}
  latest=$(find "$cache/tuner" -mindepth 1 -maxdepth 1 -type d -name 'v*' 2>/dev/null | sort -V | tail -1)
  for f in "${latest:-/nonexistent}"/*.json; do
    [ -f "$f" ] && cp "$f" "$dest/$(basename "$f" .json).$1.json"
  done
  return 0
}
# bench/create_ab.c built against the headers in $1 into $2 (the beside and trees parts).
build_create_ab() {
  cc -std=c11 -D_POSIX_C_SOURCE=200809L -fopenmp -O2 -I"$1" bench/create_ab.c -o "$2" -ldl -lz -lpthread -lm
}
for part in "$@"; do
  case $part in
  tests|tests-c|tests-rest)
    # the whole suite no longer fits one call of the GPU machine with a build and a cold JIT cache:
    # tests-c runs the C test programs (test_*), tests-rest every other step
    filter=${SPX_TEST_FILTER:-*} skip=${SPX_TEST_SKIP:-}
    case $part in
    tests-c) filter='test_*' ;;
    tests-rest) skip='test_*' ;;
    esac
    # the GPU machine has no package mirror (SPX_NO_INSTALL: a missing tool skips) and its Debian
    # python3 lacks NumPy: the Python package is tested with a Python of the machine's that has
    # NumPy and SciPy (CuPy too, where there is one), when there is one
    if [ -z "${SPX_PYTHON:-}" ] && ! /usr/bin/python3 -c 'import numpy, scipy' 2>/dev/null; then
      for py in /opt/*/.venv/bin/python /usr/local/bin/python3; do
        if [ -x "$py" ] && "$py" -c 'import numpy, scipy, setuptools, wheel, pip' 2>/dev/null; then
          export SPX_PYTHON=$py; break
        fi
      done
    fi
    SPX_TEST_FILTER=$filter SPX_TEST_SKIP=$skip SPX_NO_INSTALL=${SPX_NO_INSTALL:-1} tests/run.sh out > "$dest/$part.txt" 2>&1
    tail -1 "$dest/$part.txt" ;;
  select)
    for run in cold warm; do
      $spx select --eval --set large --json-file "$dest/select-large-$run.json" --svg "$dest/select-large-$run.svg" \
        > "$dest/select-large-$run.txt" 2>&1
    done
    keep_calibration select
    sed -n '/^summary/,$p' "$dest/select-large-warm.txt" ;;
  beside)
    # plan creation with the host's passes beside the upload (SPX_PLAN_UPLOAD_BESIDE=1: every size
    # below the staging one) against after it (=0), per shared matrix, each half apart: the fit half
    # sets SPX__PLAN_BESIDE_NNZ (bench/create_ab.c, built here)
    build_create_ab include "$dest/create_ab" || { echo "== beside: create_ab did not build"; continue; }
    for half in fit validation; do
      # shellcheck disable=SC2046 # one matrix per word
      "$dest/create_ab" SPX_PLAN_UPLOAD_BESIDE 0 1 $($spx select --list --set shared --half $half | awk '{print $3}') \
        > "$dest/beside-$half.txt" 2>&1
      tail -n +3 "$dest/beside-$half.txt" | sort -k2,2n | tail -12
    done
    rm -f "$dest/create_ab" ;;
  trees)
    # plan creation of an older tree against this one, in turns: SPX_AB_OLD names a tarball of the
    # older commit's include/ (git archive --format=tar.gz -o old.tgz COMMIT include); create_ab is
    # built against each and run twice each (old, new, old, new) on the shared validation half,
    # with a knob left at its default on both sides so that only the trees differ
    if [ ! -f "${SPX_AB_OLD:-}" ]; then echo "== trees: SPX_AB_OLD is not a file"; continue; fi
    mkdir -p "$dest/trees-old"
    tar xzf "$SPX_AB_OLD" -C "$dest/trees-old" || { echo "== trees: $SPX_AB_OLD did not unpack"; continue; }
    for v in old new; do
      inc=include; [ $v = old ] && inc="$dest/trees-old/include"
      build_create_ab "$inc" "$dest/create_ab-$v" || { echo "== trees: create_ab ($v) did not build"; continue 2; }
    done
    mats=$($spx select --list --set shared --half validation | awk '{print $3}')
    # shellcheck disable=SC2086 # one matrix per word
    for v in old new; do "$dest/create_ab-$v" SPX_PLAN_UPLOAD_BESIDE 16384 16384 $mats > /dev/null 2>&1; done # JIT cache
    for r in 1 2; do
      for v in old new; do
        # shellcheck disable=SC2086
        "$dest/create_ab-$v" SPX_PLAN_UPLOAD_BESIDE 16384 16384 $mats > "$dest/trees-$v-$r.txt" 2>&1
      done
    done
    rm -rf "$dest/trees-old" "$dest"/create_ab-* ;;
  shared|replicated)
    # the tuner's eval corpus (bench/corpus/split.tsv), each half apart: the shared matrices as they
    # are, or each replicated block-diagonally to 20M nonzeros (about 3 minutes a half on an H100)
    for half in fit validation; do
      $spx select --eval --set $part --half $half --strategies model --json-file "$dest/select-$part-$half.json" \
        > "$dest/select-$part-$half.txt" 2>&1
      sed -n '/^summary/,/^  model/p' "$dest/select-$part-$half.txt"
    done
    keep_calibration $part ;;
  tiered)
    # the tiered JIT: auto end to end for real (plan + SpMVs, synchronized) against cuSPARSE CSR,
    # with warm JIT caches and with auto's kernels (specialized and generic) removed from them
    # first; the shared validation half and the large set
    $spx select --eval --set shared --half validation --strategies model --no-solve --cold \
      --json-file "$dest/select-cold-shared-validation.json" > "$dest/select-cold-shared-validation.txt" 2>&1
    $spx select --eval --set large --strategies model --no-solve --cold \
      --json-file "$dest/select-cold-large.json" > "$dest/select-cold-large.txt" 2>&1
    grep -A14 "^end to end for real" "$dest/select-cold-shared-validation.txt" "$dest/select-cold-large.txt" ;;
  buckets)
    # the shape buckets' cost: the unrolled formats with bucketed and with exact shape constants,
    # interleaved (bucketed, exact, bucketed, exact) so that clock drift hits both, on matrices
    # whose longest rows (33-57) fall into buckets
    for run in 1 2; do
      for mode in bucketed exact; do
        flag=""; [ $mode = exact ] && flag="--exact-shape"
        # shellcheck disable=SC2086
        $spx bench rep:bcsstk26:4000000 rep:de2010:4000000 rep:ct2010:4000000 rep:vt2010:4000000 \
          --formats ell,hyb,jds --reps 15 $flag \
          --json "$dest/buckets-$mode-$run.json" > "$dest/buckets-$mode-$run.txt" 2>&1
      done
    done
    python3 bench/buckets_table.py "$dest" > "$dest/buckets.txt"
    cat "$dest/buckets.txt" ;;
  solve|solve-defer)
    # solve-defer: the same with `spx solve --defer` (spx's plan starts on the CSR as it is and
    # converts when the residual says it pays), into solve-large-defer.txt
    sfx=""; extra=""
    [ "$part" = solve-defer ] && { sfx="-defer"; extra="--defer"; }
    : > "$dest/solve-large$sfx.txt"
    for spec in "poisson7:128 --method cg" "poisson27:100 --method pcg" "elasticity:48 --method pcg" \
                "rep:$shared/bcsstk16.mtx.gz:20000000 --method pcg" "rep:$shared/cage10.mtx.gz:20000000 --method bicgstab" \
                "powerlaw:4000000 --method bicgstab --maxit 300"; do
      echo "== spx solve $spec --tol 1e-8 $extra" >> "$dest/solve-large$sfx.txt"
      # shellcheck disable=SC2086
      $spx solve $spec --tol 1e-8 $extra >> "$dest/solve-large$sfx.txt" 2>&1
    done
    grep -E "^== |^plan|spx vs" "$dest/solve-large$sfx.txt" ;;
  upload)
    # spx_device_upload of 256 MiB: the pinned pool (default workers, 4, 2) against the driver's
    # pageable path (SPX_UPLOAD_THREADS=0), each in a process of its own
    : > "$dest/upload.txt"
    for t in "" 4 2 0; do
      if [ -n "$t" ]; then SPX_UPLOAD_THREADS=$t $spx device --upload 256 >> "$dest/upload.txt" 2>&1
      else $spx device --upload 256 >> "$dest/upload.txt" 2>&1; fi
    done
    cat "$dest/upload.txt" ;;
  bench)
    $spx bench --set large --dtype both --reps 15 --json "$dest/bench-large.json" --csv "$dest/bench-large.csv" \
      --svg "$dest/bench-large.svg" > "$dest/bench-large.txt" 2>&1
    tail -4 "$dest/bench-large.txt" ;;
  stencil-ab)
    # The in-core one-step stencil kernel (depth 1) with 1 and 2 x cells per thread
    # (SPX_STENCIL_XV), runs interleaved 1, 2, 1, 2 so that clocks and temperature drift hit both:
    # kernel-time GStencil/s and its share of the roofline, the device copy bandwidth that
    # `spx stencil` measures in the same process over 2 sizeof(T) bytes per cell. Edges:
    # $SPX_AB_EDGES (default 256 512 768 1024: 1024^3 double is 2 x 8 GiB on the device, 8 GiB
    # pinned). About 1-2 minutes on an H100. Files: stencil-ab.txt (table), stencil-ab.jsonl (one
    # `spx stencil --json` object a run), stencil-ab.err.
    t0=$SECONDS
    : > "$dest/stencil-ab.jsonl"; : > "$dest/stencil-ab.err"
    {
      echo "stencil-ab: in-core one-step kernel, depth 1; rate over kernel time; roof = device copy GB/s measured in the same process / (2 sizeof(T)) per cell"
      printf '%-6s %5s %5s %3s %11s %9s %6s %9s\n' type edge steps xv GStencil/s roof %roof "copy GB/s"
      for type in float double; do
        for e in ${SPX_AB_EDGES:-256 512 768 1024}; do
          steps=$(( 8589934592 / (e * e * e) ))   # about 2^33 cell updates: 20-100 ms of kernels
          [ $steps -lt 16 ] && steps=16
          [ $steps -gt 512 ] && steps=512
          for rep in 1 2; do
            for xv in 1 2; do
              json=$(SPX_STENCIL_XV=$xv $spx stencil --n "$e" --method incore --depth 1 --type $type --steps $steps \
                       --json 2>> "$dest/stencil-ab.err" | tr -d '\n')
              echo "$json" >> "$dest/stencil-ab.jsonl"
              field() { printf '%s' "$json" | sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p"; }
              if [ -z "$(field kernel_gstencils)" ]; then
                printf '%-6s %5s %5s %3s %11s (failed: see stencil-ab.err)\n' $type "$e" $steps $xv -
                continue
              fi
              # xv from the plan, not the request: a mismatch would show here
              awk -v t=$type -v e="$e" -v s=$steps -v x="$(field xv)" -v k="$(field kernel_gstencils)" \
                  -v r="$(field roofline_gstencils)" -v c="$(field copy_gbs)" \
                  'BEGIN { printf "%-6s %5s %5s %3s %11.2f %9.2f %6.1f %9.1f\n", t, e, s, x, k, r, (r > 0 ? 100 * k / r : 0), c }'
            done
          done
        done
      done
    } > "$dest/stencil-ab.txt"
    # the best run of each (type, edge, xv), and xv 2 over xv 1
    awk 'NR > 2 && $5 != "-" { key = $1 " " $2; if (!(key in seen)) { seen[key] = 1; order[n++] = key }
                               if ($5 > best[key, $4]) { best[key, $4] = $5; pct[key, $4] = $7 } }
         END { print "summary, best of 2 runs: type edge | xv=1 GStencil/s %roof | xv=2 GStencil/s %roof | xv2/xv1"
               for (i = 0; i < n; i++) { k = order[i]
                 printf "%-12s | %9.2f %5.1f%% | %9.2f %5.1f%% | %.3f\n", k, best[k, 1], pct[k, 1], best[k, 2], pct[k, 2],
                        (best[k, 1] > 0 ? best[k, 2] / best[k, 1] : 0) } }' "$dest/stencil-ab.txt" > "$dest/stencil-ab-summary.txt"
    cat "$dest/stencil-ab.txt" "$dest/stencil-ab-summary.txt"
    echo "stencil-ab: $((SECONDS - t0)) s" ;;
  memcheck)
    # compute-sanitizer memcheck over the GPU test programs (SPX_TEST_QUICK: every 8th shared
    # matrix), the tuner calibration made first without the sanitizer (its 2M-row probes would take
    # minutes under it). Budget: $SPX_MEMCHECK_SECONDS (default 480) over all programs; a program
    # cut by the budget is listed as such, not as clean. One file: memcheck.txt.
    cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    $spx select poisson7:32 > /dev/null 2>&1
    t0=$SECONDS; budget=${SPX_MEMCHECK_SECONDS:-480}
    : > "$dest/memcheck.txt"
    for t in test_cuda test_device test_plan test_solve test_amg test_stencil test_baseline test_jit test_loader interop; do
      [ -x "out/$t" ] || continue
      left=$((budget - (SECONDS - t0)))
      if [ $left -lt 20 ]; then echo "== $t: not run (budget)" >> "$dest/memcheck.txt"; continue; fi
      t1=$SECONDS
      SPX_TEST_QUICK=1 timeout $left "$cs" --tool memcheck --leak-check full "out/$t" > "$dest/mc.log" 2>&1
      rc=$?
      { echo "== $t: exit $rc, $((SECONDS - t1)) s$( [ $rc -eq 124 ] && echo ' (cut by the budget)')"
        grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [a-z_]|ERROR SUMMARY|LEAK SUMMARY" "$dest/mc.log"
        grep -B2 -A12 "^========= [A-Z][a-z]" "$dest/mc.log" | grep -v "^========= *$" | head -60
      } >> "$dest/memcheck.txt"
    done
    rm -f "$dest/mc.log"
    grep -E "^== |ERROR SUMMARY" "$dest/memcheck.txt" ;;
  trace)
    # where spx_plan_create's time goes on the solver's Poisson (SPX_PLAN_TRACE: per-part lines)
    SPX_PLAN_TRACE=1 $spx solve poisson7:128 --method cg --tol 1e-8 > "$dest/trace.txt" 2>&1
    cat "$dest/trace.txt" ;;
  fig11)
    # The paper's Figure 11 under a 1 GiB budget, $SPX_FIG11_STEPS steps (default 128: the paper
    # takes the best TTS memory allows, and 32 steps capped it at 32), at $SPX_FIG11_DEPTH (default:
    # the library's; files get -dN when set). Each edge first runs in core with no budget cap, at
    # depth 1 and the sweep's depth: those kernel rates are the bounds' in-core terms. About 2-3 minutes.
    st=${SPX_FIG11_STEPS:-128}; sfx="s$st"; dopt=""
    [ -n "${SPX_FIG11_DEPTH:-}" ] && { sfx="$sfx-d$SPX_FIG11_DEPTH"; dopt="--depth $SPX_FIG11_DEPTH"; }
    # shellcheck disable=SC2086
    $spx stencil --sweep --budget 1G --steps "$st" --type float $dopt --json-file "$dest/stencil-fig11-$sfx.json" \
      --csv "$dest/stencil-fig11-$sfx.csv" --svg "$dest/stencil-fig11-$sfx.svg" > "$dest/stencil-fig11-$sfx.txt" 2>&1
    grep -E "^(edge|640|768|896|1024) " "$dest/stencil-fig11-$sfx.txt" ;;
  stencil-trace)
    # Where overlap's time goes: float 1024^3, 1 GiB budget, 128 steps, at depth 2 and 4, with
    # SPX_STENCIL_TRACE (every copy and launch: stream, kind, start, end). Per stream: busy ms
    # and share of the wall time. Files: stencil-trace-dN.csv, stencil-trace-dN.txt.
    for d in 2 4; do
      SPX_STENCIL_TRACE="$dest/stencil-trace-d$d.csv" $spx stencil --n 1024 --steps 128 --type float --method overlap \
        --budget 1G --depth $d > "$dest/stencil-trace-d$d.txt" 2>&1
      grep -E "^rate|^plan|^time" "$dest/stencil-trace-d$d.txt"
      awk -F, 'NR > 1 { busy[$1] += $4 - $3; kind[$1 " " $2] += $4 - $3; if ($4 > w) w = $4 }
               END { for (s in busy) printf "  %-8s busy %9.2f ms = %5.1f%% of %.2f ms\n", s, busy[s], 100 * busy[s] / w, w
                     for (k in kind) printf "    %-16s %9.2f ms\n", k, kind[k] }' "$dest/stencil-trace-d$d.csv" \
        | tee -a "$dest/stencil-trace-d$d.txt"
    done ;;
  tb-pf)
    # The in-core temporal-blocking kernel against its load distance (SPX_STENCIL_TB_PF: 0 loads
    # each plane where it is used, as the kernel did up to 29c9df5; N loads N planes ahead), depth 2
    # and 4, float and double, at $SPX_INCORE_EDGE (default 2000) for float and $SPX_INCORE_EDGE_D
    # (default 1600) for double, so two grids fit 80 GB; the distances interleaved. Kernel-time
    # GStencil/s and its share of the one-step roofline (device copy bandwidth measured in the same
    # process / 2 sizeof(T) bytes per cell). About 2-3 minutes on an H100. Files: tb-pf.txt, tb-pf.jsonl.
    : > "$dest/tb-pf.jsonl"
    {
      echo "tb-pf: in-core spx_stencil_tb, kernel-time GStencil/s (share of the one-step roofline), ${SPX_TB_STEPS:-32} steps"
      for t in float double; do
        e=${SPX_INCORE_EDGE:-2000}; [ "$t" = double ] && e=${SPX_INCORE_EDGE_D:-1600}
        for d in 2 4; do
          line="$t $e^3 depth $d:"
          for pf in ${SPX_TB_PFS:-0 1 2 4}; do
            j=$(SPX_STENCIL_TB_PF=$pf $spx stencil --n "$e" --steps "${SPX_TB_STEPS:-32}" --type $t --method incore \
                  --depth $d --json 2>&1 | tr -d '\n')
            echo "$j" >> "$dest/tb-pf.jsonl"
            r=$(echo "$j" | grep -o '"kernel_gstencils": [0-9.]*' | awk '{print $2}')
            f=$(echo "$j" | grep -o '"roofline_gstencils": [0-9.]*' | awk '{print $2}')
            line="$line  pf$pf $(awk -v r="${r:-0}" -v f="${f:-0}" 'BEGIN{printf "%.1f (%.0f%%)", r, (f > 0 ? 100 * r / f : 0)}')"
          done
          echo "$line"
        done
      done
    } > "$dest/tb-pf.txt" 2>&1
    cat "$dest/tb-pf.txt" ;;
  stencil-2800)
    # The same depth-2 kernel in core on a float cube whose edge is not a power of two and whose two
    # grids fit an 80 GB GPU ($SPX_INCORE_EDGE, default 2000), then float 2800^3 (87.8 GB on the
    # host) with overlap, bounded by that in-core rate. About 1.5 minutes on an H100.
    e=${SPX_INCORE_EDGE:-2000}
    $spx stencil --n "$e" --steps 32 --type float --method incore --depth 2 --json > "$dest/stencil-incore-$e.json" 2>&1
    r=$(grep -o '"kernel_gstencils": [0-9.]*' "$dest/stencil-incore-$e.json" | awk '{print $2}')
    echo "in-core depth-2 kernel rate at $e^3: ${r:-?} GStencil/s"
    $spx stencil --n 2800 --steps 32 --type float --method overlap ${r:+--incore-rate "$r"} > "$dest/stencil-2800.txt" 2>&1
    grep -E "^rate|of the bound|^kernel" "$dest/stencil-2800.txt" ;;
  amg)
    # AMG-PCG against AMGCL on the same card (issue 33): 3-D 7-point Poisson N^3, b = 1, x0 = 0,
    # rtol 1e-8, N in $SPX_AMG_SIZES (default 100 150). spx: `spx solve --precond amg` with each
    # smoother of $SPX_AMG_SMOOTHERS (default chebyshev gs), run twice (the first fills the JIT and
    # tuner caches; the second is the one reported). AMGCL: CG + smoothed aggregation + SPAI0 on its
    # CUDA backend (bench/peers/amgcl_poisson.cu, built here with nvcc from $SPX_AMGCL, default
    # ../shared/peers/amgcl), 3 runs. Files: amg.txt (summary), amg-N-S.txt, amgcl-N.txt.
    amgcl=${SPX_AMGCL:-../shared/peers/amgcl}
    drv=""
    if [ -d "$amgcl" ] && command -v nvcc > /dev/null; then
      nvcc -O3 -std=c++17 -arch=native -Xcompiler -fopenmp -DAMGCL_NO_BOOST -I"$amgcl" bench/peers/amgcl_poisson.cu \
        -o "$dest/amgcl_poisson" -lcusparse -lgomp > "$dest/amgcl-build.txt" 2>&1 && drv="$dest/amgcl_poisson"
    fi
    : > "$dest/amg.txt"
    for n in ${SPX_AMG_SIZES:-100 150}; do
      for s in ${SPX_AMG_SMOOTHERS:-chebyshev gs}; do
        for run in 1 2; do
          $spx solve "gen:poisson7:$n" --precond amg --smoother "$s" --ones --tol 1e-8 > "$dest/amg-$n-$s.txt" 2>&1
        done
        { echo "== spx $n^3, CG + AMG ($s)"
          grep -E "^plan|^amg|^  level|^  +[0-9]+ |^  setup [0-9]|^  setup  |^  iterations  |^  end to end" "$dest/amg-$n-$s.txt"
        } >> "$dest/amg.txt"
      done
      if [ -n "$drv" ]; then
        "$drv" "$n" 3 > "$dest/amgcl-$n.txt" 2>&1
        { echo "== amgcl $n^3"; grep -E "^amgcl|^run |complexity|levels" "$dest/amgcl-$n.txt"; } >> "$dest/amg.txt"
      else
        echo "== amgcl $n^3: not built (see amgcl-build.txt; needs nvcc and $amgcl)" >> "$dest/amg.txt"
      fi
    done
    cat "$dest/amg.txt" ;;
  amg-paper)
    # papers/003's experiment (examples/amg_paper): iso N^3 and ani N^3 (z coupling 1e-4) x the
    # paper's configurations (JC-based, GS-JC-mixed, Chaotic-GS-based, CPU-GS-based, spx's default)
    # x AMG alone and AMG-BiCGSTAB, to 1e-8, on the GPU and then on the host backend (all host
    # cores), with the paper's iterations beside. Sizes: the paper's (iso 10..70, ani 10..60) plus
    # $SPX_AMG_PAPER_LARGE (default 100 150) on the GPU. The first GPU run fills the JIT and tuner
    # caches and is discarded (--csv gives the same rows as CSV). Files: amg-paper-gpu.txt, amg-paper-host.txt.
    large=$(echo ${SPX_AMG_PAPER_LARGE:-100 150} | tr ' ' ',')
    out/amg_paper --iso 10 --ani '' --mode amg > /dev/null 2>&1
    out/amg_paper --iso "10,20,30,40,50,60,70${large:+,$large}" --ani 10,20,30,40,50,60 \
      > "$dest/amg-paper-gpu.txt" 2>&1
    out/amg_paper --host > "$dest/amg-paper-host.txt" 2>&1
    grep -E "^prob|70\^3|60\^3" "$dest/amg-paper-gpu.txt"
    grep -E "70\^3|60\^3" "$dest/amg-paper-host.txt" | sed 's/^/host /' ;;
  dist)
    # spx/dist.h on the machine's GPUs (one rank each, Open MPI): CG to 1e-8 on a 7-point Poisson,
    # weak scaling (a 126^3 block per GPU, about 2M rows, stacked in z) and strong scaling (200^3,
    # 8M rows), each with --spmv 100 (the halo's overlap); the one-process GPU solves beside. Files:
    # dist-single-{126,200}.txt, dist-{weak,strong}-NP.txt.
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    cores=$(nproc)
    $spx solve gen:poisson7:126 --method cg > "$dest/dist-single-126.txt" 2>&1
    $spx solve gen:poisson7:200 --method cg > "$dest/dist-single-200.txt" 2>&1
    for np in 1 2 4 8; do
      [ "$np" -le "$gpus" ] || continue
      for run in weak strong; do
        spec=poisson7:126x126x$((126 * np)); [ $run = strong ] && spec=poisson7:200x200x200
        OMP_NUM_THREADS=$((cores / np)) mpirun --allow-run-as-root --oversubscribe --bind-to none -np $np \
          $spx solve $spec --method cg --spmv 100 > "$dest/dist-$run-$np.txt" 2>&1
      done
    done
    grep -H -E "us per iteration" "$dest"/dist-single-*.txt
    for f in "$dest"/dist-weak-*.txt "$dest"/dist-strong-*.txt; do [ -f "$f" ] && sed -n '1,3p;/^  rank      rows/,$p' "$f"; done ;;
  dist-stencil)
    # The stencil over the machine's GPUs (spx/dist.h's spx_dist_stencil_run, one rank per GPU, Open
    # MPI): float $SPX_DIST_STENCIL_N^3 (default 2800: 87.8 GB, more than an 80 GB GPU holds, and in
    # core it would need two grids), $SPX_DIST_STENCIL_STEPS steps (default 32), the default method
    # (overlap) and interval, on 2 and 4 GPUs where there are that many: the halos overlapped with
    # the interior, then --no-overlap (the exchange timed alone). Beside them: the single-GPU in-core
    # kernel rate at the same plane size (N x N x 512, kernel-time GStencil/s: the GPU's own rate,
    # no PCIe), whose sum over the GPUs is the ideal, and one GPU out of core on the whole grid. The
    # large messages go through shared memory (no CMA single copy, which containers forbid) and are
    # driven while the interior computes. About 3 minutes on 2 H100s (most of it pinning and filling
    # the grid). Files: dist-stencil-incore.json, dist-stencil-one.json, dist-stencil-NP.json,
    # dist-stencil-NP-no-overlap.json, dist-stencil.txt (the summary).
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    cores=$(nproc)
    n=${SPX_DIST_STENCIL_N:-2800}; steps=${SPX_DIST_STENCIL_STEPS:-32}
    $spx stencil --n "$n,$n,512" --steps "$steps" --type float --method incore --json \
      > "$dest/dist-stencil-incore.json" 2>&1
    $spx stencil --n "$n" --steps "$steps" --type float --json > "$dest/dist-stencil-one.json" 2>&1
    for np in 2 4; do
      [ "$np" -le "$gpus" ] || continue
      for mode in overlap no-overlap; do
        flag=""; sfx=""; [ $mode = no-overlap ] && { flag=--no-overlap; sfx=-no-overlap; }
        # shellcheck disable=SC2086
        OMP_NUM_THREADS=$((cores / np)) OMPI_MCA_btl_vader_single_copy_mechanism=none \
          mpirun --allow-run-as-root --oversubscribe --bind-to none -np $np \
          $spx stencil --n "$n" --steps "$steps" --type float $flag --json > "$dest/dist-stencil-$np$sfx.json" 2>&1
      done
    done
    python3 - "$dest" "$n" "$steps" > "$dest/dist-stencil.txt" <<'PY'
import json, os, sys
dest, n, steps = sys.argv[1], sys.argv[2], sys.argv[3]
def load(name):  # the first JSON object of the file (the command's notices may come before it)
    try:
        text = open(os.path.join(dest, name)).read()
        return json.JSONDecoder().raw_decode(text[text.index("{"):])[0]
    except (OSError, ValueError):
        return None
inc, one = load("dist-stencil-incore.json"), load("dist-stencil-one.json")
r1 = inc["kernel_gstencils"] if inc else 0
print(f"dist-stencil: float {n}^3, {steps} steps; in-core kernel rate of one GPU at {n} x {n} x 512: {r1:.1f} GStencil/s")
if one:
    print(f"  1 GPU,  out of core ({one['method']}, {one['nslabs']} slabs, tts {one['tts']}): {one['gstencils']:.1f} GStencil/s")
for np in (2, 4):
    for mode in ("", "-no-overlap"):
        j = load(f"dist-stencil-{np}{mode}.json")
        if not j:
            continue
        ideal = np * r1
        print(f"  {np} GPUs{' no overlap' if mode else ''}: {j['gstencils']:.1f} GStencil/s total "
              f"({100 * j['gstencils'] / ideal if ideal else 0:.0f}% of {np} x the in-core rate = {ideal:.1f}), "
              f"interval {j['interval']}, {j['exchanges']} exchanges, halo {j['halo_bytes_per_exchange'] / 1e9:.2f} GB "
              f"per exchange")
        for q, r in enumerate(j["per_rank"]):
            print(f"    rank {q}: planes {r['z0']:.0f}..{r['z1'] - 1:.0f}, {r['local_method']} {r['local_slabs']:.0f} slabs "
                  f"tts {r['local_tts']:.0f}, {r['total_ms']:.0f} ms, {r['gstencils']:.1f} GStencil/s; interior "
                  f"{r['interior_ms']:.0f} ms, edges {r['edge_ms']:.0f} ms, copies {r['copy_ms']:.0f} ms, exchange "
                  f"wait {r['wait_ms']:.1f} ms (post {r['post_ms']:.1f}), sync {r['agree_ms']:.1f} ms")
PY
    cat "$dest/dist-stencil.txt" ;;
  *) echo "bench/device.sh: unknown part '$part'" >&2; exit 2 ;;
  esac
done
