/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/csr.h: CSR with 32-bit row pointers (the device twin of spx_csr, whose row_ptr is
 * 64-bit). Row i is entries ptr[i] .. ptr[i+1]-1, columns strictly increasing.
 * Conversion O(nnz + n); needs nnz <= 2^31-1. */
#ifndef SPX_FORMATS_CSR_H
#define SPX_FORMATS_CSR_H

#define SPX_DESC_CSR(X, PARAM, SCALAR, ARRAY)                                  \
  SCALAR(X, int64_t, nrows, "rows")                                            \
  SCALAR(X, int64_t, ncols, "columns")                                         \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                        \
  ARRAY (X, int32_t, ptr,   nrows + 1, "row pointers: row i is ptr[i] .. ptr[i+1]-1") \
  ARRAY (X, int32_t, col,   nnz,       "column indices, strictly increasing in a row") \
  ARRAY (X, SPX_VAL, val,   nnz,       "values")

#endif
