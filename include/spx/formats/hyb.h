/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/hyb.h: HYB (Bell and Garland): the first k entries of every row in an ELL part
 * (padding as ELL), the rest in a row-major COO part. k auto follows Bell and Garland (CUSP): the
 * smallest k such that fewer than max(4096, nrows/3) rows have more than k entries.
 * Conversion O(n k + nnz). */
#ifndef SPX_FORMATS_HYB_H
#define SPX_FORMATS_HYB_H

#define SPX_DESC_HYB(X, PARAM, SCALAR, ARRAY)                                               \
  PARAM (X, k, SPX_AUTO, 0, INT32_MAX, "ELL width K; auto = the Bell-Garland rule")         \
  SCALAR(X, int64_t, nrows, "rows")                                                         \
  SCALAR(X, int64_t, ncols, "columns")                                                      \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                                     \
  SCALAR(X, int32_t, k,     "ELL width K")                                                  \
  SCALAR(X, int64_t, ncoo,  "entries in the COO part")                                      \
  ARRAY (X, int32_t, ell_col, nrows * k, "ELL column indices, column-major")                \
  ARRAY (X, SPX_VAL, ell_val, nrows * k, "ELL values, column-major; padding is -0.0")       \
  ARRAY (X, int32_t, coo_row, ncoo,      "COO rows, non-decreasing")                        \
  ARRAY (X, int32_t, coo_col, ncoo,      "COO columns")                                     \
  ARRAY (X, SPX_VAL, coo_val, ncoo,      "COO values")

#endif
