#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds a CUDA C++ program against a static library of the spx implementation with nvcc.
# Usage: nvcc_link.sh NVCC SOURCE INCLUDE_DIR LIBRARY OUTPUT
nvcc=$1 src=$2 inc=$3 lib=$4 out=$5
exec "$nvcc" -std=c++17 -O2 -I"$inc" "$src" "$lib" -Xcompiler -fopenmp -ldl -lz -o "$out"
