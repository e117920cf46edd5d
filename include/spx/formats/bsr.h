/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/bsr.h: block sparse row with r x c blocks (FEM with several unknowns per node).
 * Block row I covers rows I*r .. I*r+r-1; its blocks are row_ptr[I] .. row_ptr[I+1]-1 with block
 * columns col[] increasing; block b's entry (ii, jj) is val[(b*r + ii)*c + jj] (row-major). Slots
 * that are not nonzeros hold -0.0, as do slots past the matrix edge (kernels guard the edge).
 * auto: r = c = the size in 1..8 of least bytes; one of r, c given: the other equals it.
 * Conversion O(nnz + nblocks * r) per size tried (8 for auto; a plan passes the size it found), parallel
 * over block rows; a row whose columns do not increase is SPX_INVALID_ARGUMENT. */
#ifndef SPX_FORMATS_BSR_H
#define SPX_FORMATS_BSR_H

#define SPX_DESC_BSR(X, PARAM, SCALAR, ARRAY)                                                \
  PARAM (X, r, SPX_AUTO, 1, 64, "block rows; auto = the square size of least bytes")         \
  PARAM (X, c, SPX_AUTO, 1, 64, "block columns; auto = r")                                   \
  SCALAR(X, int64_t, nrows,   "rows")                                                        \
  SCALAR(X, int64_t, ncols,   "columns")                                                     \
  SCALAR(X, int64_t, nnz,     "nonzeros")                                                    \
  SCALAR(X, int32_t, r,       "block rows")                                                  \
  SCALAR(X, int32_t, c,       "block columns")                                               \
  SCALAR(X, int64_t, nbrows,  "block rows = ceil(nrows / r)")                                \
  SCALAR(X, int64_t, nbcols,  "block columns = ceil(ncols / c)")                             \
  SCALAR(X, int64_t, nblocks, "blocks stored")                                               \
  ARRAY (X, int32_t, row_ptr, nbrows + 1,        "blocks of block row I: row_ptr[I] ..")     \
  ARRAY (X, int32_t, col,     nblocks,           "block column of each block")               \
  ARRAY (X, SPX_VAL, val,     nblocks * r * c,   "block values, row-major in a block; fill is -0.0")

#endif
