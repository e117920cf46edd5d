/* SPDX-License-Identifier: BSD-3-Clause */
/* COO: from CSR by expanding row_ptr; back by counting rows. O(nnz + n) both ways. */

static spx_status spx__coo_from_csr(const spx_csr *a, const spx__coo_params *p, spx_fmt_coo *s) {
  spx_status st;
  int64_t i;
  (void)p;
  s->nrows = a->nrows; s->ncols = a->ncols; s->nnz = a->nnz;
  if ((st = spx__coo_alloc(s))) return st;
  SPX__FMT_OMP_FOR(a->nrows)
  for (i = 0; i < a->nrows; i++) {
    int64_t k;
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) s->row[k] = (int32_t)i;
  }
  if (a->nnz) {
    memcpy(s->col, a->col_idx, (size_t)a->nnz * sizeof(int32_t));
    memcpy(s->val.p, a->val.p, (size_t)a->nnz * SPX_DTYPE_SIZE(a->dtype));
  }
  return SPX_OK;
}

static spx_status spx__coo_to_csr(const spx_fmt_coo *s, spx_csr *o) {
  int64_t k;
  for (k = 0; k < s->nnz; k++) o->row_ptr[s->row[k] + 1]++;
  spx__prefix64(o->row_ptr, s->nrows);
  if (s->nnz) {
    memcpy(o->col_idx, s->col, (size_t)s->nnz * sizeof(int32_t));
    memcpy(o->val.p, s->val.p, (size_t)s->nnz * SPX_DTYPE_SIZE(s->dtype));
  }
  return SPX_OK;
}

static spx_status spx__coo_check(const spx_fmt_coo *s) {
  int64_t k;
  for (k = 0; k < s->nnz; k++) {
    int32_t r = s->row[k], c = s->col[k];
    if (r < 0 || r >= s->nrows || c < 0 || c >= s->ncols)
      return spx__fail(SPX_INVALID_ARGUMENT, "coo: entry %lld (%d, %d) outside the %lld x %lld matrix",
                       (long long)k, (int)r, (int)c, (long long)s->nrows, (long long)s->ncols);
    if (k > 0 && (r < s->row[k - 1] || (r == s->row[k - 1] && c <= s->col[k - 1])))
      return spx__fail(SPX_INVALID_ARGUMENT, "coo: entry %lld (%d, %d) is not after (%d, %d)", (long long)k,
                       (int)r, (int)c, (int)s->row[k - 1], (int)s->col[k - 1]);
  }
  return SPX_OK;
}

/* Entries of one row are adjacent: sum each row in double, add it to y once. */
#define SPX__COO_SPMV(T)                                                       \
  {                                                                            \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                     \
    T *yv = (T *)y;                                                            \
    int64_t k = 0;                                                             \
    spx__yscale(y, s->nrows, beta, s->dtype);                                  \
    while (k < s->nnz) {                                                       \
      int32_t r = s->row[k];                                                   \
      double sum = 0;                                                          \
      for (; k < s->nnz && s->row[k] == r; k++) sum += (double)av[k] * (double)xv[s->col[k]]; \
      yv[r] = (T)((double)yv[r] + alpha * sum);                                \
    }                                                                          \
  }

static spx_status spx__coo_spmv(const spx_fmt_coo *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__COO_SPMV);
  return SPX_OK;
}
