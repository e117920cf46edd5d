/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/coo.h: COO, coordinate triplets.
 * Entry k is (row[k], col[k], val[k]); entries sorted by row, then column, no duplicates.
 * Conversion O(nnz + n) both ways (parallel over rows from CSR). */
#ifndef SPX_FORMATS_COO_H
#define SPX_FORMATS_COO_H

#define SPX_DESC_COO(X, PARAM, SCALAR, ARRAY)                                  \
  SCALAR(X, int64_t, nrows, "rows")                                            \
  SCALAR(X, int64_t, ncols, "columns")                                         \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                        \
  ARRAY (X, int32_t, row,   nnz, "row of each entry, non-decreasing")          \
  ARRAY (X, int32_t, col,   nnz, "column of each entry, increasing in a row")  \
  ARRAY (X, SPX_VAL, val,   nnz, "values")

#endif
