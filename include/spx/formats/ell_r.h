/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/ell_r.h: ELL-R (Vazquez et al.): ELL with k = the longest row, plus the length of
 * every row, so a kernel stops at rl[i] instead of running through the padding. Padding as ELL.
 * Conversion O(n k + nnz), parallel over rows. */
#ifndef SPX_FORMATS_ELL_R_H
#define SPX_FORMATS_ELL_R_H

#define SPX_DESC_ELL_R(X, PARAM, SCALAR, ARRAY)                                \
  SCALAR(X, int64_t, nrows, "rows")                                            \
  SCALAR(X, int64_t, ncols, "columns")                                         \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                        \
  SCALAR(X, int32_t, k,     "row width K = the longest row")                   \
  ARRAY (X, int32_t, col,   nrows * k, "column indices, column-major; padding repeats a valid column") \
  ARRAY (X, SPX_VAL, val,   nrows * k, "values, column-major; padding is -0.0") \
  ARRAY (X, int32_t, rl,    nrows,     "entries of each row")

#endif
