#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The MPS program's checks, as tests/run.sh runs them (host backend, about 30 s in all on 2 cores for the
# 2-D ones; about 80 s more for the 3-D ones: hydro3d 28 s, determinism3d 20 s, matrix3d 32 s).
# Usage: examples/mps/check.sh MPS_BINARY CASE
#   hydro        a 0.5 x 0.5 m water column at rest (400 water particles), 0.5 s (5,000 steps): p at
#                depth within 5 % of rho g h (averaged over the last 0.1 s), no particle lost, the PPE
#                matrix symmetric and diagonally dominant
#   front        the dam break at a reduced size: a 0.4 x 0.8 m column (n^2 = 2, 512 particles) in a
#                1.8 m tank, 0.48 s: the surge front within 10 % of Martin & Moyce up to the wall
#   determinism  the thesis's dam break (5,824 particles, OpenMP loops on) for 40 steps, twice with 2
#                threads and once with 1: final positions equal to the bit; and the lagged, fixed-JDS
#                and auto selections on the small column: the same positions too
#   frames       --frame: PNG pictures of the dam break at steps 0, 10 and 20 (signature, width), the
#                same bytes in a second run
#   hydro3d      3-D: a 0.5 x 0.4 x 0.5 m column at rest at l0 = 0.05 m (800 water particles), dt 5e-4,
#                0.5 s (1,000 steps): p on the bottom layer and at half depth within 5 % of rho g h,
#                no particle lost, the PPE matrix symmetric and diagonally dominant
#   determinism3d  3-D: the dambreak3d layout (15,104 particles, OpenMP loops on) for 60 steps, twice with
#                2 threads and once with 1: final positions (x, y, z) equal to the bit; and the lagged,
#                fixed-JDS and auto selections on a small 3-D block: the same positions too
#   matrix3d     3-D: the dambreak3d column collapsing for 0.06 s (600 steps): no particle lost, every
#                100th PPE matrix symmetric and diagonally dominant while the free surface moves
#   nvrtc        the GPU particle kernels (particles.cu, 2-D and 3-D) compiled by NVRTC for sm_80 and
#                sm_90 in a fresh JIT cache (no GPU needed; exit 77, a skip, where NVRTC is missing)
#   gpu-twin     the GPU particle kernels against the host twins, every array after every phase to
#                the bit (the GPU's correction takes the host's solution): the small column 300 steps
#                (lagged selection) and the thesis's dam break 30 steps (exit 77 without a GPU)
#   gpu-twin3d   the same in 3-D: dambreak3d at l0 = 0.05 m (4,928 particles) 30 steps, at its
#                default l0 (15,104 particles) 20 steps, and a small column (3,732 particles, dt 5e-4)
#                600 steps, through its front's impact on the far wall, where the first collisions
#                come (exit 77 without a GPU)
#   gpu-run      the whole step on the GPU (device CSR, device b and x in the solve): two runs equal
#                to the bit (the solver's reductions are deterministic on one device), and within
#                1e-8 m of the host run after 300 steps (the CG's sums run in another order on the
#                GPU, so the pressures differ in the last bits; exit 77 without a GPU)
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
  frames)
    for run in a b; do
      mkdir "$tmp/$run"
      "$mps" --backend host --layout dambreak --steps 20 --every 0 --quiet --frame 10 --frame-width 320 --out "$tmp/$run"
    done
    for k in 0000000 0000010 0000020; do
      f="$tmp/a/frame_$k.png"
      # the PNG signature, then IHDR with width 320 (00 00 01 40)
      test "$(od -A n -t x1 -N 20 "$f" | tr -d ' \n')" = "89504e470d0a1a0a0000000d4948445200000140" ||
        { echo "frames: $f is not a 320-pixel-wide PNG" >&2; exit 1; }
      cmp "$f" "$tmp/b/frame_$k.png"
    done
    if ls "$tmp"/a/*.tmp >/dev/null 2>&1; then echo "frames: a .tmp file was left behind" >&2; exit 1; fi
    echo "frames: 3 PNG frames, 320 pixels wide, the same bytes run after run" ;;
  hydro3d) # every core: the 3-D particle loops scale (the 2-D cases above do not)
    "$mps" --backend host --select csr --dim 3 --l0 0.05 --dt 5e-4 --tank 0.5,0.5,0.5 \
      --water 0,0,0,0.5,0.4,0.5 --time 0.5 --every 0 --check mass,hydro,matrix ;;
  determinism3d)
    for run in a:2 b:2 c:1; do
      OMP_NUM_THREADS=${run#*:} "$mps" --backend host --dim 3 --layout dambreak3d --steps 60 --every 0 --quiet \
        --dump "$tmp/${run%:*}"
    done
    cmp "$tmp/a" "$tmp/b" && cmp "$tmp/a" "$tmp/c"
    for sel in lagged jds auto; do
      OMP_NUM_THREADS=1 "$mps" --backend host --dim 3 --l0 0.05 --dt 5e-4 --tank 0.5,0.4,0.3 --water 0,0,0,0.25,0.3,0.3 \
        --steps 100 --every 0 --quiet --select $sel --dump "$tmp/s_$sel"
    done
    cmp "$tmp/s_lagged" "$tmp/s_jds" && cmp "$tmp/s_lagged" "$tmp/s_auto"
    "$mps" --backend host --dim 3 --layout dambreak3d --steps 60 --every 0 --quiet --compare "$tmp/a"
    echo "determinism3d: identical positions (2 threads twice, 1 thread; lagged, jds, auto)" ;;
  matrix3d) # every core, as hydro3d
    "$mps" --backend host --select csr --dim 3 --layout dambreak3d --time 0.06 --every 0 \
      --check mass,matrix ;;
  nvrtc)
    SPX_CACHE_DIR="$tmp/cache" "$mps" --jit-check sm_80,sm_90 ;;
  gpu-twin)
    "$mps" --particles twin --tank 0.5,0.6 --water 0,0,0.3,0.4 --steps 300 --every 0 --quiet --check matrix
    "$mps" --particles twin --layout dambreak --steps 30 --every 0 --quiet --select csr ;;
  gpu-twin3d)
    "$mps" --particles twin --dim 3 --layout dambreak3d --l0 0.05 --steps 30 --every 0 --quiet --check matrix
    "$mps" --particles twin --dim 3 --layout dambreak3d --steps 20 --every 0 --quiet --select csr
    "$mps" --particles twin --dim 3 --l0 0.05 --dt 5e-4 --tank 0.5,0.4,0.3 --water 0,0,0,0.25,0.3,0.3 --steps 600 \
      --every 0 --quiet --select csr ;;
  gpu-run)
    small="--tank 0.5,0.6 --water 0,0,0.3,0.4 --steps 300 --every 0 --quiet --select csr"
    # shellcheck disable=SC2086
    "$mps" --particles gpu $small --dump "$tmp/g1"
    # shellcheck disable=SC2086
    "$mps" --particles gpu $small --dump "$tmp/g2"
    cmp "$tmp/g1" "$tmp/g2"
    # shellcheck disable=SC2086
    "$mps" --particles host $small --dump "$tmp/h" --compare "$tmp/g1" --tolerance 1e-8
    "$mps" --particles gpu --layout dambreak --steps 40 --every 0 --quiet --dump "$tmp/d1"
    "$mps" --particles gpu --layout dambreak --steps 40 --every 0 --quiet --dump "$tmp/d2"
    cmp "$tmp/d1" "$tmp/d2"
    echo "gpu-run: identical positions run after run; within 1e-8 m of the host's" ;;
  *) echo "check.sh: unknown case $2 (hydro, front, determinism, frames, hydro3d, determinism3d, matrix3d, nvrtc, gpu-twin, gpu-twin3d, gpu-run)" >&2; exit 2 ;;
esac
