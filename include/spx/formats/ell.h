/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/ell.h: ELLPACK. An nrows x k dense block stored column-major: slot j of row i is at
 * i + j*nrows. Row i's entries fill slots 0 .. len-1 (columns increasing); the other slots are
 * padding: value -0.0, column = the row's last column (min(i, ncols-1) for an empty row), so a
 * kernel may run all k slots without a branch. k >= the longest row (auto: equal to it).
 * Conversion O(n k + nnz), parallel over rows. */
#ifndef SPX_FORMATS_ELL_H
#define SPX_FORMATS_ELL_H

#define SPX_DESC_ELL(X, PARAM, SCALAR, ARRAY)                                  \
  PARAM (X, k, SPX_AUTO, 0, INT32_MAX, "row width K; auto = the longest row")  \
  SCALAR(X, int64_t, nrows, "rows")                                            \
  SCALAR(X, int64_t, ncols, "columns")                                         \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                        \
  SCALAR(X, int32_t, k,     "row width K (slots per row)")                     \
  ARRAY (X, int32_t, col,   nrows * k, "column indices, column-major; padding repeats a valid column") \
  ARRAY (X, SPX_VAL, val,   nrows * k, "values, column-major; padding is -0.0")

#endif
