/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/rbp_csr.h: RBP-CSR, row block packing on CSR (papers/000, section 3.2, Figure 3,
 * Algorithm 2). Each row's nonzeros split into maximal runs of consecutive columns. A run of two
 * or more is a block: its values go to comp_val, and only its first and last column to comp_col
 * (Comp_Values, Comp_Columns). Row i's blocks are comp_val[val_ptr[i] ..] and comp_col[col_ptr[i]
 * ..] (Val_ptr, Col_ptr). A run of one is an isolated nonzero, kept in a separate CSR part
 * (RowPtr, Values_CSR, Columns_CSR). Memory is exactly formula (3):
 * 12(N+1) + 4 Ncol + 8 Nval + 12 Nnon with Ncol = 2 nblocks.
 * Where the paper is silent: runs of exactly two are blocks (they cost what two isolated entries
 * cost; the paper's parabolic_fem, "longest run 2", gains nothing, which fits); all pointers are
 * 32-bit, as its 12(N+1) says. Conversion O(nnz + n), parallel over rows. */
#ifndef SPX_FORMATS_RBP_CSR_H
#define SPX_FORMATS_RBP_CSR_H

#define SPX_DESC_RBP_CSR(X, PARAM, SCALAR, ARRAY)                                            \
  SCALAR(X, int64_t, nrows,   "rows (N)")                                                    \
  SCALAR(X, int64_t, ncols,   "columns")                                                     \
  SCALAR(X, int64_t, nnz,     "nonzeros (Nz = Nval + Nnon)")                                 \
  SCALAR(X, int64_t, nblocks, "blocks (runs of >= 2 consecutive columns); Ncol = 2 nblocks") \
  SCALAR(X, int64_t, nval,    "values in blocks (Nval)")                                     \
  SCALAR(X, int64_t, nnon,    "isolated nonzeros (Nnon)")                                    \
  ARRAY (X, SPX_VAL, comp_val, nval,        "Comp_Values: block values, row by row")         \
  ARRAY (X, int32_t, comp_col, 2 * nblocks, "Comp_Columns: first and last column of each block") \
  ARRAY (X, int32_t, val_ptr,  nrows + 1,   "Val_ptr: row i's first index in comp_val")      \
  ARRAY (X, int32_t, col_ptr,  nrows + 1,   "Col_ptr: row i's first index in comp_col")      \
  ARRAY (X, int32_t, row_ptr,  nrows + 1,   "RowPtr of the isolated part")                   \
  ARRAY (X, SPX_VAL, csr_val,  nnon,        "Values_CSR: isolated values")                   \
  ARRAY (X, int32_t, csr_col,  nnon,        "Columns_CSR: isolated columns")

#endif
