/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/sell.h: SELL-C-sigma (Kreutzer et al.). Rows are sorted by decreasing length inside
 * windows of sigma rows (perm[p] = row at position p; stored only when sigma > 1), then cut into
 * slices of c positions. Slice s is a c x w ELL block, column-major, at slice_ptr[s] (w = its
 * longest row = (slice_ptr[s+1] - slice_ptr[s]) / c); padding as ELL, and positions past nrows in
 * the last slice are all padding with column 0. Conversion O(slots + n log sigma). */
#ifndef SPX_FORMATS_SELL_H
#define SPX_FORMATS_SELL_H

#define SPX_DESC_SELL(X, PARAM, SCALAR, ARRAY)                                           \
  PARAM (X, c,     32,  1, 4096,      "slice height C (rows per slice)")                 \
  PARAM (X, sigma, 256, 1, INT32_MAX, "sorting window sigma (1 = keep the row order)")   \
  SCALAR(X, int64_t, nrows,   "rows")                                                    \
  SCALAR(X, int64_t, ncols,   "columns")                                                 \
  SCALAR(X, int64_t, nnz,     "nonzeros")                                                \
  SCALAR(X, int32_t, c,       "slice height C")                                          \
  SCALAR(X, int32_t, sigma,   "sorting window sigma")                                    \
  SCALAR(X, int64_t, nslices, "slices = ceil(nrows / C)")                                \
  SCALAR(X, int64_t, nslots,  "slots stored (padding included)")                         \
  ARRAY (X, int32_t, perm,      (sigma > 1 ? nrows : 0), "row at sorted position p")     \
  ARRAY (X, int32_t, slice_ptr, nslices + 1,             "first slot of each slice")     \
  ARRAY (X, int32_t, col,       nslots, "column indices, column-major per slice")        \
  ARRAY (X, SPX_VAL, val,       nslots, "values, column-major per slice; padding is -0.0")

#endif
