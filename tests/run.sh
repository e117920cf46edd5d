#!/usr/bin/env bash
# Runs every test the build made: the cmocka programs of each toolchain (gcc, clang, clang with
# ASan+UBSan), the header-only build check, the C++17 check, the CLI checks and the fuzzer for a
# bounded time. Prints one summary line "spx-tests: N passed, N failed, N skipped".
# Usage: tests/run.sh [OUTDIR]     Env: SPX_FUZZ_SECONDS (default 60), SPX_TEST_FILTER (glob).
set -u
cd "$(dirname "$0")/.."
out=${1:-out}
pass=0; fail=0; skip=0; failed=()
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
# intercept_tls_get_addr=0: LSan in LLVM <= 16 crashes at exit after dlopen of NVRTC/cuSPARSE
# (dynamic TLS, google/sanitizers#1322); protect_shadow_gap=0: cuInit fails under ASan otherwise.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0:protect_shadow_gap=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# libgomp spinning threads triple test times on a loaded 2-core machine.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export SPX_BIN="$PWD/$out/spx"
export SPX_GEN_DIR="$PWD/$out/gen"     # the generated template table, for the staleness test
# A private JIT disk cache: tests must not depend on (or fill) the user's ~/.cache/spx.
export SPX_CACHE_DIR=${SPX_CACHE_DIR:-$log/cache}

count() { # $1 = label, $2 = exit code, $3 = log file; cmocka lines give the per-test counts
  local p f s
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$3" | awk '{t+=$1} END{print t+0}')
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$3" | awk '{t+=$1} END{print t+0}')
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$3" | awk '{t+=$1} END{print t+0}')
  if [ $((p + f + s)) -eq 0 ]; then   # not a cmocka program: its exit code is the verdict
    if [ "$2" -eq 0 ]; then p=1; elif [ "$2" -eq 77 ]; then s=1; else f=1; fi
  elif [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1                               # crashed or sanitizer abort after the cmocka summary
  fi
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  if [ "$f" -ne 0 ]; then failed+=("$1"); echo "---- $1 failed; its output:"; tail -n 60 "$3"; fi
  printf '%-40s %4d passed %3d failed %3d skipped\n' "$1" "$p" "$f" "$s"
}

run() { # $1 = label, rest = command
  local label=$1; shift
  case "$label" in ${SPX_TEST_FILTER:-*}) ;; *) return ;; esac
  local lf="$log/$(echo "$label" | tr '/ ' '__').log"
  "$@" >"$lf" 2>&1; count "$label" $? "$lf"
}

for dir in "$out" "$out/clang" "$out/clang_san"; do
  [ -d "$dir" ] || continue
  for t in "$dir"/test_*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    run "${t#$out/}" "$t"
  done
done

# Header-only: the example builds with nothing but cc, the include path, -ldl and -lz.
run "plain-cc hello.c" sh -c "build/cc_plain.sh examples/hello.c include $log/hello && $log/hello"
# The spx command's sources in toolchains without OpenMP (which alone predefines _POSIX_C_SOURCE
# in gcc): every declaration present, no bare pragma (a missing strtok_r declaration crashed it).
cli_strict() { # $1 = compiler
  local f
  for f in examples/spx/*.c; do
    "$1" -std=c11 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
      -Werror=implicit-function-declaration -Iinclude -fsyntax-only "$f" || return 1
  done
}
run "spx command sources, cc without OpenMP" cli_strict "${CC:-cc}"
command -v clang >/dev/null && run "spx command sources, clang without OpenMP" cli_strict clang
# An out-of-tree format (DIA) added with no edit to spx, checked on a few shared matrices.
run "plain-cc dia example" sh -c "build/cc_plain.sh examples/dia/main.c include $log/dia && $log/dia"

# The CUDA C++ example (built when nvcc exists): exit 77 means no GPU here.
[ -x "$out/interop" ] && run "interop (CUDA C++, caller's stream)" "$out/interop"

if [ -x "$out/clang_fuzz/fuzz_mm" ]; then
  mkdir -p "$log/corpus"
  run "fuzz_mm (${SPX_FUZZ_SECONDS:-60}s)" "$out/clang_fuzz/fuzz_mm" -max_total_time="${SPX_FUZZ_SECONDS:-60}" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$log/" "$log/corpus" tests/data/mm_seeds
fi

# The tuner's calibration file parser (a file in the cache directory anything may have written).
if [ -x "$out/clang_fuzz/fuzz_tuner" ]; then
  mkdir -p "$log/corpus_tuner"
  run "fuzz_tuner (${SPX_FUZZ_TUNER_SECONDS:-15}s)" "$out/clang_fuzz/fuzz_tuner" -max_total_time="${SPX_FUZZ_TUNER_SECONDS:-15}" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$log/" "$log/corpus_tuner" tests/data/tuner_seeds
fi

[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "spx-tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
