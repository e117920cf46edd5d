/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/sell16.h: SELL-C-sigma with index compression. The layout of SELL (slices of c
 * sorted positions, column-major inside a slice, sorting windows of sigma rows, padding -0.0 on the
 * row's last column), but a slot's column is cbase[s] + col[q] with a 16-bit unsigned offset from
 * its slice's base column (the smallest column the slice's rows use). On banded and FEM matrices
 * (every slice's columns within 65536 of each other) that stores 2 bytes per slot instead of 4,
 * which is what a bandwidth-bound kernel saves: 1/6 of the traffic in double, 1/4 in float.
 * Positions past the last row (last slice) are padding with offset 0.
 *
 * The converter declines (SPX_UNSUPPORTED) a matrix where some slice spans more than 65536 columns;
 * the tuner then picks another format. sigma auto: 1 (no perm array) unless sorting by length in
 * windows of 256 saves more padded bytes than the perm array costs. Conversion O(slots + n log
 * sigma). */
#ifndef SPX_FORMATS_SELL16_H
#define SPX_FORMATS_SELL16_H

#define SPX_DESC_SELL16(X, PARAM, SCALAR, ARRAY)                                                 \
  PARAM (X, c,     32,       1, 4096,      "slice height C (rows per slice)")                      \
  PARAM (X, sigma, SPX_AUTO, 1, INT32_MAX, "sorting window; auto = 256 when it saves bytes, else 1") \
  SCALAR(X, int64_t, nrows,   "rows")                                                            \
  SCALAR(X, int64_t, ncols,   "columns")                                                         \
  SCALAR(X, int64_t, nnz,     "nonzeros")                                                        \
  SCALAR(X, int32_t, c,       "slice height C")                                                  \
  SCALAR(X, int32_t, sigma,   "sorting window sigma")                                            \
  SCALAR(X, int64_t, nslices, "slices = ceil(nrows / C)")                                        \
  SCALAR(X, int64_t, nslots,  "slots stored (padding included)")                                 \
  ARRAY (X, int32_t,  perm,      (sigma > 1 ? nrows : 0), "row at sorted position p")            \
  ARRAY (X, int32_t,  slice_ptr, nslices + 1,             "first slot of each slice")            \
  ARRAY (X, int32_t,  cbase,     nslices,                 "base column of each slice")           \
  ARRAY (X, uint16_t, col,       nslots, "column - cbase[slice], column-major per slice")        \
  ARRAY (X, SPX_VAL,  val,       nslots, "values, column-major per slice; padding is -0.0")

#endif
