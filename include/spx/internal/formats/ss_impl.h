/* SPDX-License-Identifier: BSD-3-Clause */
/* SS: the nonzeros in row order cut into segments; idx restarts at every row start and every
 * segment start. O(nnz + n); the entries are copied in parallel, the runs listed in one pass. */

static spx_status spx__ss_from_csr(const spx_csr *a, const spx__ss_params *p, spx_fmt_ss *s) {
  int64_t L = p->seg, nnz = a->nnz, nseg = (nnz + L - 1) / L, nruns = 0, i, k, r = 0;
  spx_status st;
  if (L & (L - 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "ss_seg = %lld is not a power of two (the halving sum of "
                     "papers/001 Figure 8 needs one)", (long long)L);
  for (i = 0; i < a->nrows; i++)
    if (spx__row_len(a, i) > 0) nruns += (a->row_ptr[i + 1] - 1) / L - a->row_ptr[i] / L + 1;
  if ((st = spx__fits32(nseg * L, "ss slots")) || (st = spx__fits32(nruns, "ss runs"))) return st;
  s->nrows = a->nrows; s->ncols = a->ncols; s->nnz = nnz; s->seg = (int32_t)L; s->nseg = nseg; s->nruns = nruns;
  if ((st = spx__ss_alloc(s))) return st;
  if (nnz) {
    memcpy(s->col, a->col_idx, (size_t)nnz * sizeof(int32_t));
    memcpy(s->val.p, a->val.p, (size_t)nnz * SPX_DTYPE_SIZE(a->dtype));
  }
  SPX__FMT_OMP_FOR(a->nrows)
  for (i = 0; i < a->nrows; i++) {
    int64_t q; /* private to the thread, unlike k */
    for (q = a->row_ptr[i]; q < a->row_ptr[i + 1]; q++) s->idx[q] = (int32_t)(q - SPX__MAX(a->row_ptr[i], q / L * L));
  }
  for (k = nnz; k < nseg * L; k++) { /* the tail continues the last run with zeros */
    s->col[k] = s->col[k - 1];
    s->idx[k] = s->idx[k - 1] + 1;
    spx_val_pad(s->val, k, a->dtype);
  }
  for (i = 0; i < a->nrows; i++) {
    int64_t sg;
    if (spx__row_len(a, i) == 0) continue;
    for (sg = a->row_ptr[i] / L; sg <= (a->row_ptr[i + 1] - 1) / L; sg++, r++) {
      s->run_row[r] = (int32_t)i;
      if (SPX__MAX(a->row_ptr[i], sg * L) == sg * L) s->seg_run[sg] = (int32_t)r; /* first run of sg */
    }
  }
  s->seg_run[nseg] = (int32_t)nruns;
  return SPX_OK;
}

static spx_status spx__ss_to_csr(const spx_fmt_ss *s, spx_csr *o) {
  int64_t k, r = -1;
  for (k = 0; k < s->nnz; k++) {
    if (s->idx[k] == 0) r++;
    if (r < 0 || r >= s->nruns)
      return spx__fail(SPX_INVALID_ARGUMENT, "ss: slot %lld belongs to no run", (long long)k);
    o->row_ptr[s->run_row[r] + 1]++;
  }
  spx__prefix64(o->row_ptr, s->nrows);
  if (s->nnz) {
    memcpy(o->col_idx, s->col, (size_t)s->nnz * sizeof(int32_t));
    memcpy(o->val.p, s->val.p, (size_t)s->nnz * SPX_DTYPE_SIZE(s->dtype));
  }
  return SPX_OK;
}

static spx_status spx__ss_check(const spx_fmt_ss *s) {
  int64_t L = s->seg, k, r = -1;
  if (L < 1 || (L & (L - 1)) || s->nseg != (s->nnz + L - 1) / L)
    return spx__fail(SPX_INVALID_ARGUMENT, "ss: seg = %lld (a power of two) and nseg = %lld for %lld nonzeros",
                     (long long)L, (long long)s->nseg, (long long)s->nnz);
  for (k = 0; k < s->nseg * L; k++) {
    int run_start = k < s->nnz && (k % L == 0 || s->idx[k] == 0);
    int32_t want = run_start ? 0 : (k % L == 0 ? -1 : s->idx[k - 1] + 1);
    if (s->idx[k] != want)
      return spx__fail(SPX_INVALID_ARGUMENT, "ss: idx[%lld] = %d, expected %d", (long long)k, (int)s->idx[k], (int)want);
    if (s->col[k] < 0 || s->col[k] >= s->ncols)
      return spx__fail(SPX_INVALID_ARGUMENT, "ss: col[%lld] = %d out of range", (long long)k, (int)s->col[k]);
    if (k >= s->nnz) {
      if (s->col[k] != s->col[s->nnz - 1] || !spx_val_is_pad(s->val, k, s->dtype))
        return spx__fail(SPX_INVALID_ARGUMENT, "ss: tail slot %lld must repeat the last column with -0.0", (long long)k);
      continue;
    }
    if (run_start) {
      r++;
      if (r >= s->nruns || s->run_row[r] < 0 || s->run_row[r] >= s->nrows)
        return spx__fail(SPX_INVALID_ARGUMENT, "ss: run %lld missing or its row out of range", (long long)r);
      if (k % L == 0 && s->seg_run[k / L] != r)
        return spx__fail(SPX_INVALID_ARGUMENT, "ss: seg_run[%lld] = %d, expected %lld", (long long)(k / L),
                         (int)s->seg_run[k / L], (long long)r);
      /* A row goes on into the next run only across a segment boundary. */
      if (r > 0 && (s->run_row[r] < s->run_row[r - 1] || (s->run_row[r] == s->run_row[r - 1] && k % L)))
        return spx__fail(SPX_INVALID_ARGUMENT, "ss: run %lld (row %d) out of order", (long long)r, (int)s->run_row[r]);
    }
    if (k > 0 && (!run_start || s->run_row[r] == s->run_row[r - 1]) && s->col[k] <= s->col[k - 1])
      return spx__fail(SPX_INVALID_ARGUMENT, "ss: slot %lld: columns not increasing in row %d", (long long)k,
                       (int)s->run_row[r]);
  }
  if (r + 1 != s->nruns || s->seg_run[s->nseg] != s->nruns)
    return spx__fail(SPX_INVALID_ARGUMENT, "ss: %lld runs found, nruns = %lld, seg_run ends at %d",
                     (long long)(r + 1), (long long)s->nruns, (int)s->seg_run[s->nseg]);
  return SPX_OK;
}

/* The host twin of the segmented sum: each run (idx restarting at 0) is summed, then added to its
 * row, as a block's slot 0 does after the halving loop. */
#define SPX__SS_SPMV(T)                                                        \
  {                                                                            \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                     \
    T *yv = (T *)y;                                                            \
    int64_t k, r = -1;                                                         \
    double sum = 0;                                                            \
    spx__yscale(y, s->nrows, beta, s->dtype);                                  \
    for (k = 0; k < s->nseg * s->seg; k++) {                                   \
      if (s->idx[k] == 0) {                                                    \
        if (r >= 0) yv[s->run_row[r]] = (T)((double)yv[s->run_row[r]] + alpha * sum); \
        r++;                                                                   \
        sum = 0;                                                               \
      }                                                                        \
      sum += (double)av[k] * (double)xv[s->col[k]];                            \
    }                                                                          \
    if (r >= 0) yv[s->run_row[r]] = (T)((double)yv[s->run_row[r]] + alpha * sum); \
  }

static spx_status spx__ss_spmv(const spx_fmt_ss *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__SS_SPMV);
  return SPX_OK;
}
