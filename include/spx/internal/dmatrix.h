/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/dmatrix.h: what the device matrices and converters (cuda_impl.h) give the planner's
 * side above them (stage_impl.h, the tuner): a CSR already on the device, which the converters
 * take as their input, and the plain launch the analysis kernels share with them.
 * Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_DMATRIX_H
#define SPX_INTERNAL_DMATRIX_H

#include "common.h"
#include "cuda_types.h"
#include "../cuda.h"

/* A host CSR's arrays on the device (made by spx__dcsr_stage, stage_impl.h): one upload serves the
 * plan's profile and validation, then its build. cuSPARSE takes the 32-bit row_ptr the profile
 * kernel writes on the way, the device converters (SELL, SELL16, SDIA, BSR) the 64-bit one. */
typedef struct spx__dcsr {
  spx_context *ctx;
  int64_t nrows, ncols, nnz;
  spx_dtype dtype;
  spx_devptr rp, rp32, ci, va; /* rp32 0 when nnz > INT32_MAX; va 0 until spx__dcsr_values */
  int has_values;               /* va allocated and uploaded (or going up: va_up), for a build that uses the staged arrays */
  spx__h2d_async *va_up;        /* the values' upload while a converter reads the pattern: spx__dcsr_values_wait */
  double stage_s[4];            /* staging's parts (alloc, upload, rows kernel + download, histogram), for traces */
} spx__dcsr;

/* The values are on the device once this returns SPX_OK (their pooled upload, if any, joined). */
spx_status spx__dcsr_values_wait(spx__dcsr *d);
/* grid blocks of 256 threads on the context's stream (none when grid < 1). */
spx_status spx__launch256(spx_context *ctx, void *fn, int64_t grid, void **params, const char *name);

#endif /* SPX_INTERNAL_DMATRIX_H */
