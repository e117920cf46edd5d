/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/baseline.h: cuSPARSE as the baseline, used as an expert would use it.
 *
 * A plan holds one matrix on the device in the layout that one cuSPARSE SpMV algorithm reads, and
 * everything that algorithm needs, made once: the cuSPARSE handle, the sparse-matrix descriptor,
 * dense-vector descriptors (re-pointed at the caller's vectors on each call, never re-created),
 * the work buffer, and the analysis of cusparseSpMV_preprocess where the library has it
 * (CUDA 12.4+). spx_cusparse_spmv then issues exactly one cusparseSpMV on the context's stream:
 * the number a careful cuSPARSE user would report, and what spx's own kernels are measured against.
 *
 *   spx_cusparse_plan *p;
 *   spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BEST, NULL, &p);   // a: host spx_csr
 *   spx_cusparse_spmv(p, 1.0, x, 0.0, y);                            // device vectors
 *   printf("%s\n", spx_cusparse_alg_name(spx_cusparse_plan_alg(p)));
 *   spx_cusparse_plan_destroy(p);
 *
 * BEST builds every algorithm that applies to the matrix, one after the other, times each (median
 * of `reps` runs timed with events, after `warmup` untimed runs, back to back on the stream, with
 * alpha = 1, beta = 0), keeps the fastest and frees the others as it goes (so at most two layouts
 * are on the device at once). The times stay readable (spx_cusparse_plan_times), and an algorithm
 * that was skipped or failed says why (spx_cusparse_plan_note).
 *
 * Layouts, converted on the host from the spx_csr and uploaded once:
 *   csr   row offsets 32-bit when nnz < 2^31, else 64-bit offsets and 64-bit column indices
 *   coo   a row index per entry; column indices and values are the csr arrays (shared in BEST)
 *   sell  cuSPARSE's sliced ELLPACK: slices of sell_slice_size rows, each padded to its longest
 *         row (the last slice to full height), column-major inside a slice, padding with column
 *         index -1 and value 0; no row reordering
 *   bsr   square blocks of bsr_block_dim, row-major inside a block, block columns sorted; needs
 *         nrows and ncols to be multiples of the block dim. The automatic block dim is the one of
 *         2, 3, 4, 6 and 8 that stores the fewest explicit zeros (a tie goes to the larger), and
 *         only when the blocks hold at most bsr_max_fill times the nonzeros: 3 for 3-unknowns-per-
 *         node FEM matrices, 2 for a 7-point stencil, none for a random sparse matrix.
 * An algorithm that does not apply is SPX_UNSUPPORTED with the reason (a plan asked for it alone)
 * or a note (BEST). So is one that the loaded cuSPARSE lacks (SELL and BSR need CUDA 12's
 * cusparseCreateSlicedEll / cusparseCreateBsr; SpMV on BSR ran with CUDA 13.0's library, and one
 * that does not know CUSPARSE_SPMV_BSR_ALG1 is asked for its default algorithm instead).
 *
 * Memory: a plan owns its device arrays except those of spx_cusparse_plan_create_device_csr,
 * which wraps a CSR the caller keeps on the device (no copy; the caller frees it after the plan).
 * A plan is used by one thread at a time. Host contexts, machines without a GPU and machines
 * without cuSPARSE get SPX_NOT_AVAILABLE with the reason. */
#ifndef SPX_BASELINE_H
#define SPX_BASELINE_H

#include "status.h"
#include "types.h"
#include "csr.h"
#include "loader.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The algorithms. ORDER: the order BEST tries them in (layouts that share arrays are adjacent).
 *  _(ENUM_SUFFIX, "name",     "layout and cuSPARSE SpMV algorithm") */
#define SPX_CUSPARSE_ALG_LIST(_)                                                    \
  _(CSR_ALG1,      "csr_alg1", "CSR, CUSPARSE_SPMV_CSR_ALG1 (the default)")          \
  _(CSR_ALG2,      "csr_alg2", "CSR, CUSPARSE_SPMV_CSR_ALG2 (deterministic)")        \
  _(COO_ALG1,      "coo_alg1", "COO, CUSPARSE_SPMV_COO_ALG1 (the default)")          \
  _(COO_ALG2,      "coo_alg2", "COO, CUSPARSE_SPMV_COO_ALG2 (deterministic)")        \
  _(SELL,          "sell",     "sliced ELLPACK, CUSPARSE_SPMV_SELL_ALG1")            \
  _(BSR,           "bsr",      "BSR, CUSPARSE_SPMV_BSR_ALG1")

typedef enum spx_cusparse_alg {
  SPX_CUSPARSE_BEST = -1, /* the fastest applicable one, by a timed trial */
#define SPX__CUSPARSE_ALG_ENUM(e, name, what) SPX_CUSPARSE_##e,
  SPX_CUSPARSE_ALG_LIST(SPX__CUSPARSE_ALG_ENUM)
#undef SPX__CUSPARSE_ALG_ENUM
  SPX_CUSPARSE_ALG_COUNT
} spx_cusparse_alg;

/* "csr_alg1", ..., "best"; "unknown" otherwise. */
const char *spx_cusparse_alg_name(spx_cusparse_alg alg);
/* The layout and cuSPARSE algorithm in words; "" for values outside the table. */
const char *spx_cusparse_alg_description(spx_cusparse_alg alg);
/* Parses a name (as spx_cusparse_alg_name gives it, "best" included); SPX_INVALID_ARGUMENT with
 * the valid names listed otherwise. */
spx_status spx_cusparse_alg_parse(const char *name, spx_cusparse_alg *out);

/* Options; all zero (or a NULL pointer) means the defaults in brackets. */
typedef struct spx_cusparse_options {
  int sell_slice_size;  /* rows per SELL slice [32] */
  int bsr_block_dim;    /* BSR block dim, used as given [0: automatic, see above] */
  double bsr_max_fill;  /* automatic block dim only: stored / true nonzeros allowed [2.0] */
  int warmup;           /* BEST: untimed runs per algorithm before timing [5] */
  int reps;             /* BEST: timed runs per algorithm, the median is kept [20] */
  int no_preprocess;    /* 1: do not call cusparseSpMV_preprocess (to see what it buys) */
} spx_cusparse_options;

typedef struct spx_cusparse_plan spx_cusparse_plan;

/* Builds a plan for the host CSR a (not kept: the plan holds device copies only) in ctx, for one
 * algorithm or SPX_CUSPARSE_BEST. opt may be NULL. *out = NULL on failure, and nothing leaks. */
spx_status spx_cusparse_plan_create(spx_context *ctx, const spx_csr *a, spx_cusparse_alg alg,
                                    const spx_cusparse_options *opt, spx_cusparse_plan **out);

/* A CSR that already lives on the device, in the caller's memory: wrapped without a copy. Only
 * the CSR algorithms apply (BEST picks between them). The arrays must stay valid, and their
 * contents unchanged, for the plan's life; destroying the plan does not free them. */
typedef struct spx_cusparse_device_csr {
  int64_t nrows, ncols, nnz;
  spx_dtype dtype;
  spx_devptr row_ptr;  /* nrows + 1 offsets: int32, or int64 with row_ptr_64 */
  spx_devptr col_idx;  /* nnz column indices, sorted within a row: int32, or int64 with col_idx_64 */
  spx_devptr val;      /* nnz values of dtype */
  int row_ptr_64, col_idx_64; /* equal: cuSPARSE refuses mixed widths (SPX_UNSUPPORTED) */
} spx_cusparse_device_csr;
spx_status spx_cusparse_plan_create_device_csr(spx_context *ctx, const spx_cusparse_device_csr *a,
                                               spx_cusparse_alg alg, const spx_cusparse_options *opt,
                                               spx_cusparse_plan **out);

/* y = alpha*A*x + beta*y with device vectors of the plan's dtype (x: ncols, y: nrows; they must not
 * overlap). Queued on the context's stream (the one current at the call): returns before the
 * result is ready. beta == 0 does not read y, so y may hold NaN. */
spx_status spx_cusparse_spmv(spx_cusparse_plan *p, double alpha, spx_devptr x, double beta,
                             spx_devptr y);

/* The algorithm the plan runs (BEST's winner; SPX_CUSPARSE_ALG_COUNT for NULL). */
spx_cusparse_alg spx_cusparse_plan_alg(const spx_cusparse_plan *p);
/* BEST's trial: median milliseconds per algorithm, negative where it was not timed (did not apply,
 * failed, or the plan was built for one algorithm). */
spx_status spx_cusparse_plan_times(const spx_cusparse_plan *p, double ms[SPX_CUSPARSE_ALG_COUNT]);
/* Why an algorithm was not used, or what was notable about it ("" when nothing). */
const char *spx_cusparse_plan_note(const spx_cusparse_plan *p, spx_cusparse_alg alg);
/* The BSR block dim in use or tried (0 when none). */
int spx_cusparse_plan_bsr_block_dim(const spx_cusparse_plan *p);
/* 1 when cusparseSpMV_preprocess ran for the algorithm in use. */
int spx_cusparse_plan_preprocessed(const spx_cusparse_plan *p);
/* Device bytes the plan holds now: its own matrix arrays, the work buffer and two vectors of
 * scratch (caller-owned arrays of a wrapped CSR are not counted). */
int64_t spx_cusparse_plan_device_bytes(const spx_cusparse_plan *p);
/* Frees everything the plan made (the cuSPARSE handle and descriptors too); NULL is a no-op. */
void spx_cusparse_plan_destroy(spx_cusparse_plan *p);

#ifdef __cplusplus
}
#endif
#endif /* SPX_BASELINE_H */
