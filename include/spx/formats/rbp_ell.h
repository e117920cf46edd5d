/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/rbp_ell.h: RBP-ELL, row block packing on ELL (papers/000, section 3.3, formula (4)).
 * Blocks and isolated nonzeros as in RBP-CSR. The blocks of row i go ELL-style, column-major:
 * value v of the row at comp_val[i + v*N] (width kv = most block values in a row), and block q's
 * first/last column at comp_col[i + 2q*N] and comp_col[i + (2q+1)*N] (width kc = 2 x most blocks
 * in a row). Isolated nonzeros in a separate CSR part. Memory is exactly formula (4):
 * 8 N Kv + 4 N Kc + 12 Nnon + 4(N+1).
 * Where the paper is silent: padding pairs are (1, 0), an empty run, so a kernel that loops
 * c = first .. last over every pair does no work for them and reads neither x nor comp_val;
 * unused comp_val slots hold -0.0. Conversion O(n (kv + kc) + nnz), parallel over rows. */
#ifndef SPX_FORMATS_RBP_ELL_H
#define SPX_FORMATS_RBP_ELL_H

#define SPX_DESC_RBP_ELL(X, PARAM, SCALAR, ARRAY)                                            \
  SCALAR(X, int64_t, nrows, "rows (N)")                                                      \
  SCALAR(X, int64_t, ncols, "columns")                                                       \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                                      \
  SCALAR(X, int32_t, kv,    "Kv: width of the value matrix (most block values in a row)")    \
  SCALAR(X, int32_t, kc,    "Kc: width of the column matrix (2 x most blocks in a row)")     \
  SCALAR(X, int64_t, nnon,  "isolated nonzeros (Nnon)")                                      \
  ARRAY (X, SPX_VAL, comp_val, nrows * kv, "Values_ELL: block values, column-major")         \
  ARRAY (X, int32_t, comp_col, nrows * kc, "Columns_ELL: first/last column pairs, column-major") \
  ARRAY (X, int32_t, row_ptr,  nrows + 1,  "RowPtr of the isolated part")                    \
  ARRAY (X, SPX_VAL, csr_val,  nnon,       "Values_CSR: isolated values")                    \
  ARRAY (X, int32_t, csr_col,  nnon,       "Columns_CSR: isolated columns")

#endif
