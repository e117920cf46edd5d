/* SPDX-License-Identifier: BSD-3-Clause */
/* ELL and ELL-R: one body, ELL-R adds the row lengths. O(n k + nnz), parallel over rows. */

/* Every row of a into an n x k column-major block; rl (ELL-R) gets the row lengths. */
static void spx__ell_fill_all(const spx_csr *a, int64_t k, int32_t *col, spx_val val, int32_t *rl) {
  int64_t i;
  SPX__FMT_OMP_FOR(a->nrows)
  for (i = 0; i < a->nrows; i++) {
    int64_t m = spx__pad_fill(a, i, k, col, val, i, a->nrows);
    if (rl) rl[i] = (int32_t)m;
  }
}

/* Back to CSR: row lengths from rl or from the padding marks, then the entries. */
static spx_status spx__ell_decode(const char *fmt, int64_t n, int64_t k, const int32_t *col, spx_val val,
                                  const int32_t *rl, spx_dtype t, spx_csr *o) {
  int64_t i;
  spx_val dst;
  for (i = 0; i < n; i++) {
    int64_t m = rl ? rl[i] : spx__pad_len(val, i, n, k, t);
    if (m < 0 || m > k) return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld length %lld outside [0, %lld]", fmt,
                                        (long long)i, (long long)m, (long long)k);
    o->row_ptr[i + 1] = m;
  }
  spx__prefix64(o->row_ptr, n);
  if (o->row_ptr[n] != o->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s holds %lld entries but says nnz = %lld", fmt,
                     (long long)o->row_ptr[n], (long long)o->nnz);
  dst.p = o->val.p;
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) {
    int64_t b = o->row_ptr[i], m = o->row_ptr[i + 1] - b, j;
    for (j = 0; j < m; j++) {
      o->col_idx[b + j] = col[i + j * n];
      spx_val_move(dst, b + j, val, i + j * n, t);
    }
  }
  return SPX_OK;
}

static spx_status spx__ell_check_all(const char *fmt, int64_t n, int64_t ncols, int64_t nnz, int64_t k,
                                     const int32_t *col, spx_val val, const int32_t *rl, spx_dtype t) {
  int64_t i, total = 0, longest = 0;
  for (i = 0; i < n; i++) {
    int64_t m = spx__pad_check(fmt, i, col, val, i, n, k, ncols, ncols > 0 ? spx__pad_col(i, ncols) : 0, t);
    if (m < 0) return SPX_INVALID_ARGUMENT;
    if (rl && rl[i] != m)
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: rl[%lld] = %d but the row holds %lld entries", fmt,
                       (long long)i, (int)rl[i], (long long)m);
    total += m;
    longest = SPX__MAX(longest, m);
  }
  if (total != nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s holds %lld entries but says nnz = %lld", fmt, (long long)total,
                     (long long)nnz);
  if (rl && longest != k)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: k = %lld but the longest row has %lld", fmt, (long long)k,
                     (long long)longest);
  return SPX_OK;
}

/* The width for a matrix: the longest row unless asked for more; padding needs a column. */
static spx_status spx__ell_width(const char *fmt, const spx_csr *a, int64_t want, int64_t *k) {
  int64_t longest = spx__max_row(a);
  *k = want == SPX_AUTO ? longest : want;
  if (*k < longest)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s_k = %lld is less than the longest row (%lld entries); raise "
                     "it, or use hyb or sell", fmt, (long long)*k, (long long)longest);
  if (*k > 0 && a->ncols == 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s_k = %lld on a matrix with no columns: padding needs a column",
                     fmt, (long long)*k);
  return SPX_OK;
}

static spx_status spx__ell_from_csr(const spx_csr *a, const spx__ell_params *p, spx_fmt_ell *s) {
  spx_status st;
  int64_t k;
  if ((st = spx__ell_width("ell", a, p->k, &k))) return st;
  s->nrows = a->nrows; s->ncols = a->ncols; s->nnz = a->nnz; s->k = (int32_t)k;
  if ((st = spx__ell_alloc(s))) return st;
  spx__ell_fill_all(a, k, s->col, s->val, NULL);
  return SPX_OK;
}

static spx_status spx__ell_to_csr(const spx_fmt_ell *s, spx_csr *o) {
  return spx__ell_decode("ell", s->nrows, s->k, s->col, s->val, NULL, s->dtype, o);
}

static spx_status spx__ell_check(const spx_fmt_ell *s) {
  return spx__ell_check_all("ell", s->nrows, s->ncols, s->nnz, s->k, s->col, s->val, NULL, s->dtype);
}

/* One thread per row, all k slots (padding included, as a branch-free kernel does). */
#define SPX__ELL_SPMV(T)                                                       \
  {                                                                            \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                     \
    T *yv = (T *)y;                                                            \
    int64_t i, n = s->nrows;                                                   \
    SPX__FMT_OMP_FOR(n)                                                        \
    for (i = 0; i < n; i++) {                                                  \
      double sum = 0;                                                          \
      int64_t j;                                                               \
      for (j = 0; j < s->k; j++) sum += (double)av[i + j * n] * (double)xv[s->col[i + j * n]]; \
      SPX__YSET(T, yv, i, sum);                                                \
    }                                                                          \
  }

static spx_status spx__ell_spmv(const spx_fmt_ell *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__ELL_SPMV);
  return SPX_OK;
}

static spx_status spx__ell_r_from_csr(const spx_csr *a, const spx__ell_r_params *p, spx_fmt_ell_r *s) {
  spx_status st;
  int64_t k;
  (void)p;
  if ((st = spx__ell_width("ell_r", a, SPX_AUTO, &k))) return st;
  s->nrows = a->nrows; s->ncols = a->ncols; s->nnz = a->nnz; s->k = (int32_t)k;
  if ((st = spx__ell_r_alloc(s))) return st;
  spx__ell_fill_all(a, k, s->col, s->val, s->rl);
  return SPX_OK;
}

static spx_status spx__ell_r_to_csr(const spx_fmt_ell_r *s, spx_csr *o) {
  return spx__ell_decode("ell_r", s->nrows, s->k, s->col, s->val, s->rl, s->dtype, o);
}

static spx_status spx__ell_r_check(const spx_fmt_ell_r *s) {
  return spx__ell_check_all("ell_r", s->nrows, s->ncols, s->nnz, s->k, s->col, s->val, s->rl, s->dtype);
}

/* One thread per row, stopping at the row's length (the point of ELL-R). */
#define SPX__ELL_R_SPMV(T)                                                     \
  {                                                                            \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                     \
    T *yv = (T *)y;                                                            \
    int64_t i, n = s->nrows;                                                   \
    SPX__FMT_OMP_FOR(n)                                                        \
    for (i = 0; i < n; i++) {                                                  \
      double sum = 0;                                                          \
      int64_t j;                                                               \
      for (j = 0; j < s->rl[i]; j++) sum += (double)av[i + j * n] * (double)xv[s->col[i + j * n]]; \
      SPX__YSET(T, yv, i, sum);                                                \
    }                                                                          \
  }

static spx_status spx__ell_r_spmv(const spx_fmt_ell_r *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__ELL_R_SPMV);
  return SPX_OK;
}
