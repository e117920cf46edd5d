/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats/ss.h: segmented scan with a per-element index (papers/001, section 3.4: Oshima et
 * al.'s CUDA SS). The nonzeros, in row order, are cut into segments of seg slots (one thread block
 * each). idx[k] is k's offset from the start of its row or of its segment, whichever is later, so
 * a block sums every row piece with the paper's halving loop (Figure 8) and the slots with idx 0
 * hold the sums. Those pieces are runs; run_row[r] is run r's row and seg_run[s] segment s's first
 * run (the paper leaves the write-back open: a run's row is what it needs). Rows split across
 * segments get several runs, whose sums add up in y. The last segment's tail continues the last
 * run with -0.0 values. seg is a power of two (the halving loop needs it).
 * Conversion O(nnz + n). */
#ifndef SPX_FORMATS_SS_H
#define SPX_FORMATS_SS_H

#define SPX_DESC_SS(X, PARAM, SCALAR, ARRAY)                                                 \
  PARAM (X, seg, 256, 1, 65536, "segment length (threads per block), a power of two")        \
  SCALAR(X, int64_t, nrows, "rows")                                                          \
  SCALAR(X, int64_t, ncols, "columns")                                                       \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                                      \
  SCALAR(X, int32_t, seg,   "segment length")                                                \
  SCALAR(X, int64_t, nseg,  "segments = ceil(nnz / seg)")                                    \
  SCALAR(X, int64_t, nruns, "row pieces (runs) over all segments")                           \
  ARRAY (X, int32_t, col,     nseg * seg, "column indices in row order")                     \
  ARRAY (X, SPX_VAL, val,     nseg * seg, "values in row order; the tail is -0.0")           \
  ARRAY (X, int32_t, idx,     nseg * seg, "offset from the start of the row or the segment") \
  ARRAY (X, int32_t, run_row, nruns,      "row of each run")                                 \
  ARRAY (X, int32_t, seg_run, nseg + 1,   "first run of each segment")

#endif
