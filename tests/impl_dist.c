/* SPDX-License-Identifier: BSD-3-Clause */
/* The distributed part of the implementation (spx/dist.h) alone, for the MPI programs: the core
 * comes from spx_impl (impl.c), compiled once per toolchain without MPI. POSIX as spx.h asks. */
#define _POSIX_C_SOURCE 200809L
#define SPX_DIST_IMPLEMENTATION
#include <spx/dist.h>
