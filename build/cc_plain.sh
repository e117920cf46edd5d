#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Compiles one C file the way a user of the headers would: `cc FILE -I<spx>/include -ldl -lz`.
# Usage: cc_plain.sh SOURCE INCLUDE_DIR OUTPUT
exec "${CC:-cc}" "$1" -I"$2" -ldl -lz -o "$3"
