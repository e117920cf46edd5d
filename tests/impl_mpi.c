/* SPDX-License-Identifier: BSD-3-Clause */
/* The implementation with its distributed part (spx/dist.h), for the MPI test programs: dist.h in
 * place of spx.h, as spx/dist.h tells users to. */
#define SPX_IMPLEMENTATION
#include <spx/dist.h>
