#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs every test the build made: the cmocka programs of each toolchain (gcc, clang, clang with
# ASan+UBSan), the header-only build check, the C++17 check, the CLI checks, the installed-consumer
# builds, the Python package and the fuzzer for a bounded time. Prints one summary line
# "spx-tests: N passed, N failed, N skipped". A skip counts as a failure unless it is listed below
# (skip_allowed_*) for the reason given there.
# Usage: tests/run.sh [OUTDIR]     Env: SPX_FUZZ_SECONDS (default 30), SPX_TEST_FILTER (glob),
#   SPX_TEST_SKIP (glob: the matching steps do not run),
#   SPX_SHARED_MATRICES (default ../shared/matrices, exported as an absolute path when it exists),
#   SPX_PYTHON (the interpreter the Python package is built and tested with; /usr/bin/python3).
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
# The shared matrices, named: a test that cannot find them skips, and that skip fails the run below.
if [ -z "${SPX_SHARED_MATRICES:-}" ] && [ -d ../shared/matrices ]; then
  SPX_SHARED_MATRICES=$(cd ../shared/matrices && pwd)
  export SPX_SHARED_MATRICES
fi
# A private JIT disk cache: tests must not depend on (or fill) the user's ~/.cache/spx.
export SPX_CACHE_DIR=${SPX_CACHE_DIR:-$log/cache}

# A skip is a failure unless it is one of these, each for the reason given; a test that skips for
# anything else (shared matrices not found, a file missing, a library that did not load) fails CI.
# Patterns are PROGRAM:TEST (PROGRAM without its toolchain directory; the non-cmocka programs that
# exit 77 are PROGRAM:-).
# Anywhere, GPU or not:
#   test_jit:test_templates_nvcc   compiles the templates with nvcc: skipped where nvcc is missing
#                                  (no CUDA toolkit), and always in the clang builds (the gcc one runs it)
#   python::test_gpu_cupy_*        the Python package's tests through CuPy: CuPy is not a Debian
#                                  package, so they run only where it is installed (the same device
#                                  paths run without it in python::test_gpu_*)
#   mpi_test_dist:-                spx/dist.h's test under mpirun: skipped only where MPI is not
#                                  installed (no mpirun; build/bootstrap.sh installs Open MPI where
#                                  apt works, so CI runs it); an MPI without the test built fails
skip_allowed_always=(test_jit:test_templates_nvcc 'python::test_gpu_cupy_*' mpi_test_dist:-)
# And where METIS is not installed (no metis.h; build/bootstrap.sh installs libmetis-dev where apt
# works, so CI runs them):
#   mpi_test_dist:test_metis_*     spx/dist.h's graph partition; where METIS is installed but spx was
#                                  built without it (gn args: spx_with_metis) they fail
metis=0
if echo '#include <metis.h>' | ${CC:-cc} -E -x c - >/dev/null 2>&1; then metis=1
else skip_allowed_always+=('mpi_test_dist:test_metis_*'); fi
# Only where there is no GPU (gpu=0 below), because each needs a CUDA device:
#   *:test_gpu_*                   named for it (test_jit, test_loader, test_plan, test_solve, test_amg,
#                                  test_stencil)
#   test_baseline:...              cuSPARSE and the device formats on the GPU (their gpu_ctx() is NULL)
#   test_cuda:...                  the GPU kernels against the host results
#   test_device:...                device memory, copies, timers
#   interop:-                      the CUDA C++ example exits 77 without a GPU
#   mps-gpu:-                      examples/mps's GPU particle kernels (check.sh gpu-twin, gpu-run)
#   mps-nvrtc:-                    examples/mps's kernels compiled by NVRTC: skipped only where
#                                  NVRTC is missing (no GPU machine lacks it)
skip_allowed_without_gpu=('*:test_gpu_*'
  test_baseline:test_every_alg test_baseline:test_bsr_blocks test_baseline:test_sell_options
  test_baseline:test_device_csr test_baseline:test_stream test_baseline:test_no_device_leak
  test_baseline:test_trial_times
  test_cuda:test_generated test_cuda:test_variants test_cuda:test_shared_matrices test_cuda:test_device_convert
  test_cuda:test_csr_direct
  test_device:test_round_trip_and_memset test_device:test_out_of_memory_is_a_status test_device:test_block_cache
  test_device:test_small_copies_pinned test_device:test_timer test_device:test_large_uploads
  interop:-
  'mps-gpu::-' 'mps-nvrtc::-')
# Only where there IS a GPU: the tests of running without one (they check the host fallback and
# its notice; with a device present there is nothing to fall back from). And, on a machine set up
# with SPX_NO_INSTALL=1 (the GPU machine: no package mirror), the installed-consumer builds when
# cmake or pkg-config are absent there, and the Python package's tests when Debian's python3 lacks
# numpy, scipy, setuptools, wheel or pip there.
skip_allowed_with_gpu=(test_loader:test_no_gpu_host_backend test_loader:test_fallback_notice_once 'consumer::-'
  'python::-')
# A GPU here, as spx sees it or as the system does: then every test of the second list must run.
gpu=0
if [ -e /dev/nvidia0 ] || nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then gpu=1; fi
if [ -x "$out/spx" ] && SPX_QUIET=1 "$out/spx" device --json 2>/dev/null | grep -q '"backend": *"cuda"'; then gpu=1; fi

skip_ok() { # $1 = PROGRAM:TEST; 0 if that skip is allowed here
  local pat
  for pat in "${skip_allowed_always[@]}"; do
    # shellcheck disable=SC2254
    case "$1" in $pat) return 0 ;; esac
  done
  if [ "$gpu" -ne 0 ]; then
    for pat in "${skip_allowed_with_gpu[@]}"; do
      # shellcheck disable=SC2254
      case "$1" in $pat) return 0 ;; esac
    done
    return 1
  fi
  for pat in "${skip_allowed_without_gpu[@]}"; do
    # shellcheck disable=SC2254
    case "$1" in $pat) return 0 ;; esac
  done
  return 1
}

count() { # $1 = label, $2 = exit code, $3 = log file; cmocka lines give the per-test counts
  local p f s t prog bad=()
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$3" | awk '{t+=$1} END{print t+0}')
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$3" | awk '{t+=$1} END{print t+0}')
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$3" | awk '{t+=$1} END{print t+0}')
  prog=${1##*/}; prog=${prog%% *}
  if [ $((p + f + s)) -eq 0 ]; then   # not a cmocka program: its exit code is the verdict
    if [ "$2" -eq 0 ]; then p=1; elif [ "$2" -eq 77 ]; then s=1; skip_ok "$prog:-" || bad+=("$prog"); else f=1; fi
  else
    if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then
      f=1                             # crashed or sanitizer abort after the cmocka summary
    fi
    # cmocka names each skipped test twice ("[  SKIPPED ] name", then again in the summary's list)
    for t in $(sed -n 's/^\[  SKIPPED \] \([A-Za-z_][A-Za-z0-9_]*\)$/\1/p' "$3" | sort -u); do
      skip_ok "$prog:$t" || bad+=("$t")
    done
  fi
  if [ ${#bad[@]} -ne 0 ]; then      # a skip not allowed here counts as a failure, not a skip
    s=$((s - ${#bad[@]})); f=$((f + ${#bad[@]}))
    echo "---- $1: skipped where it must run (gpu=$gpu; see skip_allowed_* in tests/run.sh): ${bad[*]}"
  fi
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  if [ "$f" -ne 0 ]; then failed+=("$1"); echo "---- $1 failed; its output:"; tail -n 60 "$3"; fi
  # the step's wall seconds last: what a GPU machine's time limit has to fit
  printf '%-40s %4d passed %3d failed %3d skipped %5ss\n' "$1" "$p" "$f" "$s" "${step_s:-0}"
}

run() { # $1 = label, rest = command
  local label=$1; shift
  case "$label" in ${SPX_TEST_FILTER:-*}) ;; *) return ;; esac
  if [ -n "${SPX_TEST_SKIP:-}" ]; then case "$label" in ${SPX_TEST_SKIP}) return ;; esac; fi
  local lf="$log/$(echo "$label" | tr '/ ' '__').log"
  local t0=$SECONDS
  "$@" >"$lf" 2>&1; local rc=$?
  step_s=$((SECONDS - t0)) count "$label" $rc "$lf"
}

for dir in "$out" "$out/clang" "$out/clang_san"; do
  [ -d "$dir" ] || continue
  # test_cli runs the spx command of its own toolchain where one is built (clang_san: the command
  # with ASan+UBSan, so that a sanitizer report from it fails the run), else the default one.
  if [ -x "$dir/spx" ]; then SPX_BIN="$PWD/$dir/spx"; else SPX_BIN="$PWD/$out/spx"; fi
  for t in "$dir"/test_*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    run "${t#$out/}" "$t"
  done
done

# spx/dist.h under MPI: mpi_test_dist (built where GN found MPI: spx_with_mpi) on 1, 2 and 4 ranks
# of this machine, for each toolchain that built it (--oversubscribe: CI has 2 cores; root needs
# --allow-run-as-root; one OpenMP thread a rank; the shared-memory transport without the
# cross-process copy that containers forbid); timeout turns a hang into a failure.
# Under ASan, Open MPI's own allocations that outlive MPI_Finalize are suppressed by library
# (tests/data/lsan_mpi.supp); full unwinding and kept plugins let the suppressions see those frames.
mpi_run() { # $1 = ranks, $2 = program, the rest its arguments
  local root=() san=()
  [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
  case "$2" in */clang_san/*) san=(env "ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0"
    "LSAN_OPTIONS=suppressions=$PWD/tests/data/lsan_mpi.supp:print_suppressions=0"
    OMPI_MCA_mca_base_component_disable_dlclose=1) ;; esac
  "${san[@]}" env OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 300 \
    mpirun -np "$1" --oversubscribe "${root[@]}" "${@:2}"
}
mpi_missing() { echo "MPI not installed (no mpirun): spx/dist.h's tests need Open MPI (build/bootstrap.sh installs it)"; return 77; }
mpi_unbuilt() { echo "mpirun is here but $out/mpi_test_dist was not built: gn args need spx_with_mpi = true (build/bootstrap.sh)"; return 1; }
if [ -x "$out/mpi_test_dist" ]; then
  for dir in "$out" "$out/clang" "$out/clang_san"; do
    [ -x "$dir/mpi_test_dist" ] || continue
    tc=${dir#"$out"}; tc=${tc#/}
    for np in 1 2 4; do run "${tc:+$tc/}mpi_test_dist -np $np" mpi_run "$np" "$dir/mpi_test_dist"; done
  done
  # spx solve under mpirun: the distributed CG on 2 ranks converges and reports both ranks; with
  # --precond amg (the AMG blocks, gs smoother) it converges in fewer iterations and reports each
  # rank's hierarchy; a one-process option it does not take is a usage error (exit 2) on every
  # rank; --partition metis converges too (where METIS is installed)
  mpi_cli() {
    local o it amg
    o=$(mpi_run 2 "$out/spx" solve gen:poisson7:12 --method cg) || { echo "$o"; return 1; }
    echo "$o"
    echo "$o" | grep -q "on 2 ranks" && echo "$o" | grep -q "converged" && echo "$o" | grep -qE "^ +1 +[0-9]+ " || return 1
    it=$(echo "$o" | sed -n 's/^  iterations *\([0-9]*\),.*/\1/p')
    o=$(mpi_run 2 "$out/spx" solve gen:poisson7:12 --precond amg --smoother gs) || { echo "$o"; return 1; }
    echo "$o"
    amg=$(echo "$o" | sed -n 's/^  iterations *\([0-9]*\),.*/\1/p')
    echo "$o" | grep -q "cg + amg blocks" && echo "$o" | grep -q "converged" && echo "$o" | grep -q "symmetric" &&
      echo "$o" | grep -qE "^ +1 +[0-9]+ .* [0-9]+ +[0-9]+ +[0-9.]+$" && [ -n "$amg" ] && [ "$amg" -lt "$it" ] || return 1
    mpi_run 2 "$out/spx" solve gen:poisson7:12 --defer >/dev/null 2>&1
    [ $? -ne 0 ] || return 1
    [ "$metis" -eq 1 ] || return 0  # --partition metis: where METIS is installed (then built in)
    o=$(mpi_run 2 "$out/spx" solve gen:poisson7:12 --method cg --partition metis) || { echo "$o"; return 1; }
    echo "$o"
    echo "$o" | grep -q "metis partition" && echo "$o" | grep -q "converged"
  }
  run "spx solve under mpirun -np 2" mpi_cli
  # spx stencil under mpirun: 4 ranks (23 planes: 6 or 5 each) with an out-of-core method under a small budget and an interval that does not divide the steps
  # match a one-process run bit for bit (--check) and report every rank; 3 planes on 4 ranks (the
  # last owns none) too; --sweep is a usage error on every rank (exit 2); --json is one object
  mpi_stencil_cli() {
    local o
    o=$(mpi_run 4 "$out/spx" stencil --n 20,18,23 --steps 7 --method mmtb --budget 40K --interval 3 --check) ||
      { echo "$o"; return 1; }
    echo "$o"
    echo "$o" | grep -q "on 4 ranks" && echo "$o" | grep -q "bitwise equal" && echo "$o" | grep -qE "^ +3 +[0-9]+\.\." ||
      return 1
    o=$(mpi_run 4 "$out/spx" stencil --host --n 9,9,3 --steps 3 --check) || { echo "$o"; return 1; }
    echo "$o"
    echo "$o" | grep -q "bitwise equal" && echo "$o" | grep -qE "^ +3 +none" || return 1
    mpi_run 2 "$out/spx" stencil --host --sweep >/dev/null 2>&1
    [ $? -eq 2 ] || return 1
    o=$(mpi_run 2 "$out/spx" stencil --host --n 12 --steps 3 --json) || { echo "$o"; return 1; }
    echo "$o"
    echo "$o" | grep -q '"ranks": 2, ' && echo "$o" | grep -q '"per_rank": \[{'
  }
  run "spx stencil under mpirun -np 4" mpi_stencil_cli
elif command -v mpirun >/dev/null; then
  run "mpi_test_dist (not built)" mpi_unbuilt
else
  run "mpi_test_dist (MPI not installed)" mpi_missing
fi

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
# docs/knobs.md lists every environment variable of the library's table (SPX__ENV in config.h).
run "docs: knobs.md matches SPX__ENV" build/gen_knobs.sh --check
# cmocka's fail_msg is variadic: with no argument after the message, C99 -Wpedantic rejects it where
# cmocka.h is not a system header (the GPU machine's, reached through CPATH), though it passes here.
fail_msg_args() {
  if grep -nE 'fail_msg\("([^"\\]|\\.)*"\)' tests/*.c; then
    echo "fail_msg needs an argument after its message (fail_msg(\"%s\", \"...\"))" >&2
    return 1
  fi
}
run "tests: fail_msg with an argument" fail_msg_args
command -v clang >/dev/null && run "spx command sources, clang without OpenMP" cli_strict clang
# An out-of-tree format (DIA) added with no edit to spx, checked on a few shared matrices.
# The DIA example on its generated matrices and on shared ones: banded (bcsstk16, accepted) and not
# (cage10: DIA declines it, which the example counts as a correct answer).
run "plain-cc dia example" sh -c "build/cc_plain.sh examples/dia/main.c include $log/dia && $log/dia \
  \"\$SPX_SHARED_MATRICES/bcsstk16.mtx.gz\" \"\$SPX_SHARED_MATRICES/cage10.mtx.gz\""

# The MPS dam break (examples/mps, host backend): a resting column's hydrostatic pressure, the
# surge front against Martin & Moyce, bit-for-bit repeatable positions and pictures (examples/mps/check.sh);
# in 3-D the resting column, repeatable positions and the PPE matrix of the collapsing column.
for c in hydro front determinism frames hydro3d determinism3d matrix3d; do
  [ -x "$out/mps" ] && run "mps: $c" examples/mps/check.sh "$out/mps" "$c"
done
# Its particle kernels on the GPU: compiled by NVRTC for sm_80 and sm_90 (no GPU needed), against
# the host twins to the bit, and whole GPU runs repeatable to the bit (both skip without a GPU).
[ -x "$out/mps" ] && run "mps-nvrtc: compile" examples/mps/check.sh "$out/mps" nvrtc
for c in gpu-twin gpu-twin3d gpu-run; do
  [ -x "$out/mps" ] && run "mps-gpu: $c" examples/mps/check.sh "$out/mps" "$c"
done

# The CUDA C++ example (built when nvcc exists): exit 77 means no GPU here.
[ -x "$out/interop" ] && run "interop (CUDA C++, caller's stream)" "$out/interop"

# Installed, as a user gets it: build/install.sh into a temporary prefix (twice: the second run
# changes nothing; a missing out dir and an unwritable prefix fail), then tests/consumer/ built
# against that prefix with CMake (find_package, spx::spx, spx_add_implementation) and with make and
# pkg-config. cmake and pkg-config are required here (build/bootstrap.sh installs them).
prefix="$log/prefix"
install_check() {
  SPX_OUT="$out" build/install.sh "$prefix" || return 1
  [ -x "$prefix/bin/spx" ] && [ -f "$prefix/include/spx/internal/templates_gen.h" ] || return 1
  if SPX_OUT="$out" build/install.sh "$prefix" | grep '^installed\|^removed'; then
    echo "a second install changed files"; return 1
  fi
  if SPX_OUT="$log/no_such_out" build/install.sh "$log/prefix_x"; then echo "no out dir: not refused"; return 1; fi
  : >"$log/not_a_dir"
  if SPX_OUT="$out" build/install.sh "$log/not_a_dir/prefix"; then echo "bad prefix: not refused"; return 1; fi
  echo "install checks passed"
}
# A missing cmake or pkg-config fails, except with SPX_NO_INSTALL=1 (the GPU machine, which has no
# package mirror: build/bootstrap.sh could not install them there): a skip, allowed below.
spx_tool_missing() { if [ -n "${SPX_NO_INSTALL:-}" ]; then return 77; fi; return 1; }
consumer_cmake() {
  command -v cmake >/dev/null || { echo "cmake not found (build/bootstrap.sh installs it)"; spx_tool_missing; return $?; }
  cmake -S tests/consumer/cmake -B "$log/consumer_cmake" -DCMAKE_PREFIX_PATH="$prefix" || return 1
  grep -qx "spx_DIR:PATH=$prefix/lib/cmake/spx" "$log/consumer_cmake/CMakeCache.txt" || \
    { echo "CMake found another spx"; return 1; }
  cmake --build "$log/consumer_cmake" && "$log/consumer_cmake/consumer"
}
# -O0: the check is pkg-config's flags and the link; the gcc build compiles the implementation at -O2.
consumer_make() {
  command -v pkg-config >/dev/null || { echo "pkg-config not found (build/bootstrap.sh installs it)"; spx_tool_missing; return $?; }
  mkdir -p "$log/consumer_make" && PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
    make -C tests/consumer/make O="$log/consumer_make" WERROR=-Werror CFLAGS=-O0 && "$log/consumer_make/consumer"
}
run "install (build/install.sh)" install_check
run "consumer: CMake find_package(spx)" consumer_cmake
run "consumer: make + pkg-config" consumer_make

# The Python package (python/), as README says to install it: pip builds it offline from a copy of
# python/ and include/ (so the repository gets no build/ or egg-info), compiling the implementation
# into its shared object, and installs it into a temporary directory; then python/tests/test_spx.py
# checks it against SciPy and NumPy, printing cmocka-style lines (test_gpu_* skip without a GPU).
# Debian's python3 (not a pyenv or venv one on PATH) with numpy, scipy, setuptools, wheel and pip
# is required, as cmake is above; SPX_PYTHON names another interpreter.
python_tests() {
  local py=${SPX_PYTHON:-/usr/bin/python3} d="$log/python" t="$PWD/python/tests/test_spx.py"
  if ! [ -x "$py" ] || ! "$py" -c 'import numpy, scipy, setuptools, wheel, pip' 2>/dev/null; then
    echo "$py with numpy, scipy, setuptools, wheel and pip not found (build/bootstrap.sh installs them)"
    spx_tool_missing; return $?
  fi
  rm -rf "$d" && mkdir -p "$d/src" && cp -R python include "$d/src/" || return 1
  "$py" -m pip install --no-build-isolation --no-index --no-deps --no-cache-dir --quiet \
    --disable-pip-version-check --root-user-action=ignore --target "$d/site" "$d/src/python" || return 1
  (cd "$d" && PYTHONPATH="$d/site" "$py" -c 'import spx; print("spx", spx.__version__, "from", spx.__file__)' &&
   PYTHONPATH="$d/site" "$py" "$t" --cmocka)
}
run "python: package built by pip, tested against SciPy" python_tests

if [ -x "$out/clang_fuzz/fuzz_mm" ]; then
  mkdir -p "$log/corpus"
  run "fuzz_mm (${SPX_FUZZ_SECONDS:-30}s)" "$out/clang_fuzz/fuzz_mm" -max_total_time="${SPX_FUZZ_SECONDS:-30}" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$log/" "$log/corpus" tests/data/mm_seeds
fi

# The tuner's calibration file parser (a file in the cache directory anything may have written).
if [ -x "$out/clang_fuzz/fuzz_tuner" ]; then
  mkdir -p "$log/corpus_tuner"
  run "fuzz_tuner (${SPX_FUZZ_TUNER_SECONDS:-15}s)" "$out/clang_fuzz/fuzz_tuner" -max_total_time="${SPX_FUZZ_TUNER_SECONDS:-15}" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$log/" "$log/corpus_tuner" tests/data/tuner_seeds
fi

# The parsers of short user strings: format parameters, names, count knobs.
if [ -x "$out/clang_fuzz/fuzz_text" ]; then
  mkdir -p "$log/corpus_text"
  run "fuzz_text (${SPX_FUZZ_TEXT_SECONDS:-10}s)" "$out/clang_fuzz/fuzz_text" -max_total_time="${SPX_FUZZ_TEXT_SECONDS:-10}" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$log/" "$log/corpus_text" tests/data/text_seeds
fi

[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "spx-tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
