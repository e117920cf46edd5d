/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/rbp_ell_r.h: RBP-ELL-R, RBP-ELL plus a length per row (papers/000, section 4.1,
 * where the layout is left out "for space"). We take the ELL-R idea literally: rl[i] is the number
 * of blocks (column pairs) of row i, so a kernel stops after rl[i] pairs; everything else is
 * RBP-ELL. Memory: formula (4) + 4N. Conversion O(n (kv + kc) + nnz), parallel over rows. */
#ifndef SPX_FORMATS_RBP_ELL_R_H
#define SPX_FORMATS_RBP_ELL_R_H

#define SPX_DESC_RBP_ELL_R(X, PARAM, SCALAR, ARRAY)                                          \
  SCALAR(X, int64_t, nrows, "rows (N)")                                                      \
  SCALAR(X, int64_t, ncols, "columns")                                                       \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                                      \
  SCALAR(X, int32_t, kv,    "Kv: width of the value matrix (most block values in a row)")    \
  SCALAR(X, int32_t, kc,    "Kc: width of the column matrix (2 x most blocks in a row)")     \
  SCALAR(X, int64_t, nnon,  "isolated nonzeros (Nnon)")                                      \
  ARRAY (X, SPX_VAL, comp_val, nrows * kv, "Values_ELL: block values, column-major")         \
  ARRAY (X, int32_t, comp_col, nrows * kc, "Columns_ELL: first/last column pairs, column-major") \
  ARRAY (X, int32_t, rl,       nrows,      "blocks (column pairs) in each row")              \
  ARRAY (X, int32_t, row_ptr,  nrows + 1,  "RowPtr of the isolated part")                    \
  ARRAY (X, SPX_VAL, csr_val,  nnon,       "Values_CSR: isolated values")                    \
  ARRAY (X, int32_t, csr_col,  nnon,       "Columns_CSR: isolated columns")

#endif
