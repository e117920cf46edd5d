/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/analyze.h: structural and numerical features of a CSR matrix, in one pass.
 *
 * The auto-tuner reads these features (B and R are the two the format-selection paper thresholds;
 * runs say how much RBP would compress); `spx analyze` prints them. spx_analyze is O(nnz) time and
 * O(nrows) extra memory, and checks the CSR layout as it goes (a malformed CSR is
 * SPX_INVALID_ARGUMENT, never a crash). */
#ifndef SPX_ANALYZE_H
#define SPX_ANALYZE_H

#include <stdio.h>
#include "status.h"
#include "csr.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spx_analysis {
  int64_t nrows, ncols, nnz;
  /* Row lengths (stored entries per row); stddev is the population one (divides by nrows). */
  int64_t row_min, row_max, empty_rows;
  double row_mean, row_stddev;
  double B; /* max row length / mean row length (selection paper, eq. 4-1); 0 when nnz == 0 */
  double R; /* density nnz / (nrows*ncols) as a FRACTION: the papers print it in %, so their
             * "R < 0.048%" threshold is R < 0.00048 here */
  /* Largest |i-j|, i-j (entries below the diagonal), j-i (above) over stored entries; 0 if none. */
  int64_t bandwidth, lower_bandwidth, upper_bandwidth;
  /* Pattern equal to its transpose; values too (compared with ==, so a NaN off the diagonal breaks
   * it). Both 0 for a non-square matrix; numerically implies structurally. */
  int structurally_symmetric, numerically_symmetric;
  int64_t missing_diagonal;   /* rows i < min(nrows, ncols) with no stored (i,i) */
  int64_t diag_dominant_rows; /* rows with |a_ii| >= sum_{j!=i} |a_ij| (a_ii = 0 when not stored) */
  int diagonally_dominant;    /* square, every row weakly dominant and at least one strictly */
  /* Maximal runs of contiguous columns within a row; an isolated entry is a run of length 1. */
  int64_t runs;
  double runs_per_row; /* runs / nrows */
  double run_mean;     /* nnz / runs */
  int64_t run_max;
  double run_share2; /* share of the nonzeros lying in runs of length >= 2 (what RBP compresses) */
  int64_t nan_count, inf_count; /* non-finite stored values */
  double seconds;               /* wall time spx_analyze took */
} spx_analysis;

/* Fills *out with the features of a. On failure *out is zeroed. With OpenMP, rows are split into
 * one chunk per thread (about equal nonzeros), each doing the row statistics and its part of the
 * symmetry walk; results do not depend on the thread count. */
spx_status spx_analyze(const spx_csr *a, spx_analysis *out);

/* Writes an analysis to f: a table of "label  value" lines (json == 0), or one JSON object with
 * every field under its struct name plus "name" (json != 0; non-finite numbers as null). name may
 * be NULL. SPX_IO when writing fails. */
spx_status spx_analysis_print(const spx_analysis *an, const char *name, FILE *f, int json);

#ifdef __cplusplus
}
#endif
#endif /* SPX_ANALYZE_H */
