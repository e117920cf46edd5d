/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/dmatrix.h: what the device matrices and converters (cuda_impl.h) give the planner's
 * side above them (stage_impl.h, the tuner): a CSR already on the device, which the converters
 * take as their input, the plain launch the analysis kernels share with them, the device
 * converters' entry and the plan trace; then what stage_impl.h gives the tuner: the CSR staged.
 * Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_DMATRIX_H
#define SPX_INTERNAL_DMATRIX_H

#include "common.h"
#include "cuda_types.h"
#include "../cuda.h"

/* A host CSR's arrays on the device (made by spx__dcsr_stage, stage_impl.h): one upload serves the
 * plan's profile and validation, then its build. cuSPARSE takes the 32-bit row_ptr the profile
 * kernel writes on the way, the device converters (SELL, SELL16, SDIA, BSR, ELL, ELL-R, JDS) the
 * 64-bit one. Or the caller's CSR on the device (spx__dcsr_adopt, spx_plan_create_device): rp32,
 * ci and va are the caller's (caller 1), rp the 64-bit row pointers made from rp32; a build that
 * would need the matrix on the host is refused (spx__dcsr_download). */
typedef struct spx__dcsr {
  spx_context *ctx;
  int64_t nrows, ncols, nnz;
  spx_dtype dtype;
  spx_devptr rp, rp32, ci, va; /* rp32 0 when nnz > INT32_MAX; va 0 until spx__dcsr_values */
  int has_values;               /* va allocated and uploaded (or going up: va_up), for a build that uses the staged arrays */
  spx__h2d_async *va_up;        /* the values' upload while a converter reads the pattern: spx__dcsr_values_wait */
  double stage_s[4];            /* staging's parts (alloc, upload, rows kernel + download, histogram), for traces */
  int caller;                   /* rp32, ci and va belong to the caller: spx__dcsr_free frees rp alone */
} spx__dcsr;

/* The values are on the device once this returns SPX_OK (their pooled upload, if any, joined). */
spx_status spx__dcsr_values_wait(spx__dcsr *d);
/* grid blocks of 256 threads on the context's stream (none when grid < 1). */
spx_status spx__launch256(spx_context *ctx, void *fn, int64_t grid, void **params, const char *name);
/* Where the kernels a CSR dmatrix of these sizes and options would bind live: the least of its
 * launches' spx__jit_where (SPX__JIT_NOWHERE on any error). row_ptr (host, may be NULL): the rows,
 * whose lengths the kernel choice reads unless opt fixes threads_per_row; without them and
 * without threads_per_row, the mean row's vector kernel. */
int spx__csr_kernels_where(spx_context *ctx, int64_t nrows, int64_t ncols, int64_t nnz, spx_dtype dtype,
                           const int64_t *row_ptr, const spx_dmatrix_options *opt);
/* 1 when d can run an SpMV at once (no compile to wait for). */
int spx__dmatrix_runnable(spx_dmatrix *d);
/* Whether format f has a device converter (its registry line's device column; SPX_DEVICE_CONVERT=0:
 * none). */
int spx__device_converts(int f);
/* a converted to f on the device (from `staged` when non-NULL); *out NULL with SPX_OK: the host's job. */
spx_status spx__dmatrix_convert_device(spx_context *ctx, const spx_csr *a, spx_format f, const spx_format_params *prm,
                                       const spx_dmatrix_options *opt, spx__dcsr *staged, spx_dmatrix **out);
/* SPX_PLAN_TRACE: whether the selection's stages and the converters' steps print their times, and
 * one step's wall time under that trace (*t: the previous mark, moved on). */

/* ---- stage_impl.h: a host CSR staged on the device for the planner ----------------------------- */
/* Uploads a's pattern into d and profiles its rows on the device: r[9] as analyze.cu's out[] (r[0]
 * the first bad row, ~0 when none), *hist the row-length histogram (the caller frees it). hist
 * NULL: the upload alone (the row pointers narrowed on the device), for a caller that validates
 * and profiles on the host. */
spx_status spx__dcsr_stage(spx_context *ctx, const spx_csr *a, int tpr, int values, spx__dcsr *d, uint64_t r[9], int64_t **hist,
                           double *upload_s);
/* The values: their upload started (_begin), or done on return. */
spx_status spx__dcsr_values_begin(spx__dcsr *d, const spx_csr *a);
spx_status spx__dcsr_values(spx__dcsr *d, const spx_csr *a);
/* The diagonal (min(rows, cols) doubles) from the staged arrays, values up, into the host array out. */
spx_status spx__dcsr_diag(const spx__dcsr *d, double *out);
/* The staged arrays, values up, downloaded into a host CSR of their own (SPX_UNSUPPORTED for the
 * caller's arrays: a plan on them builds nothing on the host). */
spx_status spx__dcsr_download(const spx__dcsr *d, spx_csr **out);
/* Frees the staged arrays (waiting for a values upload in flight; the caller's are left); d zeroed. */
void spx__dcsr_free(spx__dcsr *d);
/* The caller's CSR on the device (spx_plan_create_device) as staged arrays, not copied (d->caller):
 * the 64-bit row pointers made from its 32-bit ones on the device, then its rows profiled as
 * spx__dcsr_stage profiles them (r[9], *hist); row_ptr[0] != 0 reads as a bad row 0, row_ptr[n]
 * != nnz as a bad last row. Sizes and pointers checked by the caller. On failure nothing stays. */
spx_status spx__dcsr_adopt(spx_context *ctx, const spx_dcsr *a, int tpr, spx__dcsr *d, uint64_t r[9], int64_t **hist);
/* What is wrong with the caller's CSR whose profile found bad row `row` (spx__dcsr_adopt's r[0]): a
 * sentence into the error, SPX_INVALID_ARGUMENT (another status when the row pointers could not be read). */
spx_status spx__dcsr_bad_row(const spx__dcsr *d, uint64_t row, const char *what);

#endif /* SPX_INTERNAL_DMATRIX_H */
