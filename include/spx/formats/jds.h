/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/jds.h: jagged diagonal storage. Rows sorted by decreasing length (ties keep row
 * order): perm[p] is the row at position p. Jagged diagonal d holds entry d of every position
 * p < its length, at jd_ptr[d] + p; diagonal lengths decrease, so no padding at all.
 * Conversion O(nnz + n + njd) (a counting sort), parallel fill. */
#ifndef SPX_FORMATS_JDS_H
#define SPX_FORMATS_JDS_H

#define SPX_DESC_JDS(X, PARAM, SCALAR, ARRAY)                                  \
  SCALAR(X, int64_t, nrows, "rows")                                            \
  SCALAR(X, int64_t, ncols, "columns")                                         \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                        \
  SCALAR(X, int32_t, njd,   "jagged diagonals = the longest row")              \
  ARRAY (X, int32_t, perm,   nrows,   "row at sorted position p")              \
  ARRAY (X, int32_t, jd_ptr, njd + 1, "start of each jagged diagonal")         \
  ARRAY (X, int32_t, col,    nnz,     "column indices, diagonal by diagonal")  \
  ARRAY (X, SPX_VAL, val,    nnz,     "values, diagonal by diagonal")

#endif
