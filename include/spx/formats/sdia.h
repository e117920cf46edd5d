/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/sdia.h: sliced diagonals (SDIA). Rows are cut into slices of c; slice s stores the
 * union of its rows' diagonals (offset = column - row), increasing, as off[slice_ptr[s] ..
 * slice_ptr[s+1]-1], and for each of them c values, one per row of the slice: row s*c + l's entry
 * on diagonal d is val[d*c + l]. No column indices: a stencil or banded matrix moves its values
 * and 4/c bytes per slot, against 2-4 bytes per slot for SELL16/SELL. Slots that are not entries
 * hold -0.0 (their column may lie outside the matrix: kernels guard it), as do rows past nrows.
 * Unlike plain DIA a slice keeps only the diagonals its own rows touch, so a matrix whose band
 * wanders (bandwidth-reduced FEM, block-diagonal copies) stays compact. The converter refuses
 * (SPX_UNSUPPORTED) a matrix whose slots in real rows would exceed max_fill per nonzero.
 * Conversion O(nnz + slots) (a forward walk over the slice's offsets per row); parallel over slices. */
#ifndef SPX_FORMATS_SDIA_H
#define SPX_FORMATS_SDIA_H
#define SPX_DESC_SDIA(X, PARAM, SCALAR, ARRAY)                                                  \
  PARAM (X, c,        32, 1, 1024, "slice height C (rows per slice)")                           \
  PARAM (X, max_fill, 4,  1, 1000, "refuse when real rows' slots exceed max_fill x nnz")              \
  SCALAR(X, int64_t, nrows,   "rows")                                                           \
  SCALAR(X, int64_t, ncols,   "columns")                                                        \
  SCALAR(X, int64_t, nnz,     "nonzeros")                                                       \
  SCALAR(X, int32_t, c,       "slice height C")                                                 \
  SCALAR(X, int64_t, nslices, "slices = ceil(nrows / C)")                                       \
  SCALAR(X, int64_t, ndiags,  "diagonals, summed over the slices")                              \
  ARRAY (X, int32_t, slice_ptr, nslices + 1, "slice s owns diagonals slice_ptr[s] .. slice_ptr[s+1]-1") \
  ARRAY (X, int32_t, off,       ndiags,      "offset (column - row) of each diagonal, increasing in a slice") \
  ARRAY (X, SPX_VAL, val,       ndiags * c,  "diagonal d's value for lane l at val[d*c + l]; fill is -0.0")
#endif
