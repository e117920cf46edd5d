/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/csr.h: compressed sparse row matrices on the host, and the reference SpMV.
 *
 * Layout: row_ptr has nrows+1 int64 entries (64-bit so nnz may pass 2^31-1); col_idx has nnz int32
 * entries, strictly increasing within each row (sorted, no duplicates); values are double or float
 * as dtype says. Column indices are 32-bit: ncols must be at most 2^31-1. Device formats choose
 * their own (usually 32-bit) row pointers when the matrix allows. */
#ifndef SPX_CSR_H
#define SPX_CSR_H

#include "status.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spx_csr {
  int64_t nrows, ncols, nnz;
  spx_dtype dtype;
  int64_t *row_ptr; /* nrows + 1 */
  int32_t *col_idx; /* nnz, sorted and unique within a row */
  union {
    void *p;
    double *d;
    float *f;
  } val; /* nnz values of dtype */
} spx_csr;

/* Allocates a CSR with room for nnz entries; row_ptr is zeroed, col_idx and values are not. */
spx_status spx_csr_create(int64_t nrows, int64_t ncols, int64_t nnz, spx_dtype dtype, spx_csr **out);
/* Frees a CSR; NULL is a no-op. */
void spx_csr_destroy(spx_csr *a);
/* Deep copy, optionally to another dtype. Rows are copied as they are, valid or not: only what
 * the copy relies on is checked (sizes, arrays, dtype, row_ptr[0] = 0 and row_ptr[nrows] = nnz;
 * SPX_INVALID_ARGUMENT otherwise), in O(1). */
spx_status spx_csr_copy(const spx_csr *a, spx_dtype dtype, spx_csr **out);

/* Builds a CSR from coordinate triplets (0-based). Duplicates are summed, columns sorted.
 * val may be NULL (pattern: every value 1). Indices out of range give SPX_RANGE. O(nnz + nrows).
 * SPX_OUT_OF_MEMORY, before anything is allocated, when the build needs more memory than the
 * process can get (available memory and swap, the cgroup limit, RLIMIT_AS / RLIMIT_DATA): 2^31
 * rows take 32 GiB of row pointers while it runs, whatever nnz is. */
spx_status spx_csr_from_coo(int64_t nrows, int64_t ncols, int64_t nnz, const int32_t *row,
                            const int32_t *col, const double *val, spx_dtype dtype, spx_csr **out);

/* Transpose (A^T as a CSR of the same dtype). O(nnz + nrows + ncols). a must be valid
 * (spx_csr_validate's status otherwise, prefixed "spx_csr_transpose: "). */
spx_status spx_csr_transpose(const spx_csr *a, spx_csr **out);

/* Checks the layout invariants (a known dtype, monotone row_ptr, in-range sorted unique columns);
 * SPX_INVALID_ARGUMENT with the first violation named. */
spx_status spx_csr_validate(const spx_csr *a);

/* y = alpha*A*x + beta*y, x and y of the matrix's dtype (length ncols and nrows). beta == 0 does
 * not read y (so y may hold NaN). OpenMP-parallel over rows when compiled with OpenMP. Row
 * pointers and columns are checked as they are read (no separate pass): one out of bounds is
 * SPX_INVALID_ARGUMENT naming the first bad row, and y is then only partly written. */
spx_status spx_csr_spmv(const spx_csr *a, double alpha, const void *x, double beta, void *y);

#ifdef __cplusplus
}
#endif
#endif /* SPX_CSR_H */
