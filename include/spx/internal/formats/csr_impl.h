/* SPDX-License-Identifier: BSD-3-Clause */
/* CSR with 32-bit row pointers: copies, O(nnz + n). */

static spx_status spx__csr_from_csr(const spx_csr *a, const spx__csr_params *p, spx_fmt_csr *s) {
  spx_status st;
  int64_t i;
  (void)p;
  s->nrows = a->nrows; s->ncols = a->ncols; s->nnz = a->nnz;
  if ((st = spx__csr_alloc(s))) return st;
  for (i = 0; i <= a->nrows; i++) s->ptr[i] = (int32_t)a->row_ptr[i];
  if (a->nnz) {
    memcpy(s->col, a->col_idx, (size_t)a->nnz * sizeof(int32_t));
    memcpy(s->val.p, a->val.p, (size_t)a->nnz * SPX_DTYPE_SIZE(a->dtype));
  }
  return SPX_OK;
}

static spx_status spx__csr_to_csr(const spx_fmt_csr *s, spx_csr *o) {
  int64_t i;
  for (i = 0; i <= s->nrows; i++) o->row_ptr[i] = s->ptr[i];
  if (s->nnz) {
    memcpy(o->col_idx, s->col, (size_t)s->nnz * sizeof(int32_t));
    memcpy(o->val.p, s->val.p, (size_t)s->nnz * SPX_DTYPE_SIZE(s->dtype));
  }
  return SPX_OK;
}

static spx_status spx__csr_check(const spx_fmt_csr *s) {
  int64_t i, k;
  if (s->ptr[0] != 0 || s->ptr[s->nrows] != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "csr: ptr[0] = %d, ptr[n] = %d (want 0 and nnz = %lld)",
                     (int)s->ptr[0], (int)s->ptr[s->nrows], (long long)s->nnz);
  for (i = 0; i < s->nrows; i++)
    if (s->ptr[i + 1] < s->ptr[i] || s->ptr[i + 1] > s->nnz)
      return spx__fail(SPX_INVALID_ARGUMENT, "csr: ptr[%lld] = %d out of order", (long long)i + 1, (int)s->ptr[i + 1]);
  for (i = 0; i < s->nrows; i++)
    for (k = s->ptr[i]; k < s->ptr[i + 1]; k++)
      if (s->col[k] < 0 || s->col[k] >= s->ncols || (k > s->ptr[i] && s->col[k] <= s->col[k - 1]))
        return spx__fail(SPX_INVALID_ARGUMENT, "csr: row %lld entry %lld: column %d out of range or order",
                         (long long)i, (long long)k, (int)s->col[k]);
  return SPX_OK;
}

#define SPX__FCSR_SPMV(T)                                                      \
  {                                                                            \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                     \
    T *yv = (T *)y;                                                            \
    int64_t i;                                                                 \
    SPX__FMT_OMP_FOR(s->nrows)                                                 \
    for (i = 0; i < s->nrows; i++) {                                           \
      double sum = 0;                                                          \
      int32_t k;                                                               \
      for (k = s->ptr[i]; k < s->ptr[i + 1]; k++) sum += (double)av[k] * (double)xv[s->col[k]]; \
      SPX__YSET(T, yv, i, sum);                                                \
    }                                                                          \
  }

static spx_status spx__csr_spmv(const spx_fmt_csr *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__FCSR_SPMV);
  return SPX_OK;
}
