#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what the build needs when it is missing (gn, ninja, zlib, cmocka; cmake, pkg-config and
# make for the installed-consumer tests; Debian's python3 with numpy, scipy, setuptools, wheel and
# pip for the Python package's tests; clang for the second toolchain and the fuzzer), then writes
# out/args.gn for what this machine has. Idempotent: on a machine that has everything it only
# probes. Usage: build/bootstrap.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out}

have_hdr() { echo "#include <$1>" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }
need=()
command -v gn    >/dev/null || need+=(generate-ninja)
command -v ninja >/dev/null || need+=(ninja-build)
have_hdr zlib.h  || need+=(zlib1g-dev)
printf '#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <setjmp.h>\n#include <cmocka.h>\n' \
  | ${CC:-cc} -E -x c - >/dev/null 2>&1 || need+=(libcmocka-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ -z "${SPX_NO_INSTALL:-}" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "bootstrap: installing ${need[*]}" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "bootstrap: missing ${need[*]} and cannot apt-get install them here" >&2; exit 1
  fi
fi
# cmake, pkg-config and make: tests/run.sh builds tests/consumer/ against an installed spx with
# them; installed where apt works (CI), optional elsewhere (the GPU machine has no mirror: there
# run.sh skips those builds under SPX_NO_INSTALL=1).
opt=()
command -v cmake >/dev/null || opt+=(cmake)
command -v pkg-config >/dev/null || opt+=(pkg-config)
command -v make  >/dev/null || opt+=(make)
# Debian's Python with NumPy, SciPy, setuptools, wheel and pip: tests/run.sh builds the python/
# package offline (pip --no-build-isolation --no-index) and checks it against SciPy. Same rule as
# above: installed where apt works, and without them run.sh skips the Python tests only under
# SPX_NO_INSTALL=1.
py=/usr/bin/python3
[ -x "$py" ] || opt+=(python3)
for m in numpy:python3-numpy scipy:python3-scipy setuptools:python3-setuptools wheel:python3-wheel \
         pip:python3-pip; do
  [ -x "$py" ] && "$py" -c "import ${m%%:*}" >/dev/null 2>&1 || opt+=("${m#*:}")
done
# Debian's Open MPI (mpicc, mpirun): the distributed part (spx/dist.h) and its tests under mpirun.
# Same rule: installed where apt works (CI runs the MPI tests), optional elsewhere.
command -v mpicc >/dev/null && command -v mpirun >/dev/null || opt+=(openmpi-bin libopenmpi-dev)
# Debian's METIS: spx/dist.h's graph partition (options.partition = metis). Same rule.
have_metis() { printf '#include <metis.h>\nint main(void){idx_t o[METIS_NOPTIONS];return METIS_SetDefaultOptions(o);}\n' \
  | ${CC:-cc} -x c - -o /tmp/spx_metis_probe.$$ -lmetis >/dev/null 2>&1; local r=$?; rm -f /tmp/spx_metis_probe.$$; return $r; }
have_metis || opt+=(libmetis-dev)
if [ ${#opt[@]} -gt 0 ] && [ -z "${SPX_NO_INSTALL:-}" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "bootstrap: installing ${opt[*]}" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${opt[@]}" >/dev/null
fi
# clang is optional (second toolchain, sanitizer and fuzz builds); try to get it where apt works.
# SPX_NO_INSTALL=1 skips this on machines without a package mirror (the GPU machine).
if [ -z "${SPX_NO_INSTALL:-}" ] && ! command -v clang >/dev/null && command -v apt-get >/dev/null && \
   [ "$(id -u)" = 0 ]; then
  timeout 300 apt-get install -y -qq clang libclang-rt-dev >/dev/null 2>&1 || true
fi
with_clang=false
if command -v clang >/dev/null && echo 'int LLVMFuzzerTestOneInput(const char*d,long n){(void)d;(void)n;return 0;}' \
   | clang -fsanitize=fuzzer,address,undefined -x c - -o /tmp/spx_fuzz_probe.$$ >/dev/null 2>&1; then
  with_clang=true
fi
rm -f /tmp/spx_fuzz_probe.$$
# nvcc (CUDA toolkit) builds the CUDA C++ example; spx itself needs none of CUDA at build time.
with_nvcc=false
cuda_root=${CUDA_HOME:-/usr/local/cuda}
[ -x "$cuda_root/bin/nvcc" ] && with_nvcc=true
# MPI: mpicc or a pkg-config file answers with its flags (build/mpi_flags.sh, which GN runs too).
with_mpi=$(sh build/mpi_flags.sh --probe)
# METIS: its header and library link (the probe above, after the install).
with_metis=false
have_metis && with_metis=true
mkdir -p "$out"
args=$(printf '# written by build/bootstrap.sh for this machine\nspx_with_clang = %s\nspx_with_nvcc = %s\ncuda_root = "%s"\nspx_with_mpi = %s\nspx_with_metis = %s\n' \
  "$with_clang" "$with_nvcc" "$cuda_root" "$with_mpi" "$with_metis")
if [ ! -f "$out/args.gn" ] || [ "$(cat "$out/args.gn")" != "$args" ]; then
  printf '%s\n' "$args" > "$out/args.gn"
fi
